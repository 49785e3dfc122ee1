#!/usr/bin/env bash
# Installs the system programs lockharness needs, from Debian's packages:
# redis-server and redis-sentinel (the systems under test), etcd-server (the
# etcd locks' members), libfaketime and
# gcc (clock faults: libfaketime plus a small malloc shim built with gcc),
# chromium (the report's real-browser test), xmllint (libxml2-utils: the
# matrix's JUnit schema test), and the real lock libraries the shipped
# adapters wrap (redis-py, kazoo, python-etcd3; Curator on a JDK). Installs only what is
# missing; when it cannot install (not root, not Debian/Ubuntu), it says
# what to install and stops.
set -euo pipefail

need=()
command -v redis-server   >/dev/null 2>&1 || need+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
command -v etcd           >/dev/null 2>&1 || need+=(etcd-server)
[ -x /usr/sbin/mariadbd ] || command -v mariadbd >/dev/null 2>&1 || need+=(mariadb-server) # the MySQL locks' server
[ -f /usr/share/java/zookeeper.jar ]      || need+=(zookeeper) # the zk locks' ensemble (brings a JRE)
command -v gcc            >/dev/null 2>&1 || need+=(gcc)
[ -f /usr/include/dlfcn.h ]               || need+=(libc6-dev) # headers for the malloc shim
command -v chromium       >/dev/null 2>&1 || need+=(chromium)
command -v xmllint        >/dev/null 2>&1 || need+=(libxml2-utils) # the JUnit schema test
[ -d /usr/share/fonts/truetype/liberation ] || need+=(fonts-liberation) # chromium's text, without its recommends
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need+=(python3-redis) # the redis-py adapter (docs/protocol.md)
/usr/bin/python3 -c 'import kazoo' >/dev/null 2>&1 || need+=(python3-kazoo) # the kazoo adapter
/usr/bin/python3 -c 'import etcd3' >/dev/null 2>&1 || need+=(python3-etcd3) # the python-etcd3 adapter
command -v javac          >/dev/null 2>&1 || need+=(default-jdk-headless) # the Curator adapter compiles with javac
for j in curator-recipes jackson-databind slf4j-simple; do [ -f /usr/share/java/$j.jar ] || { need+=(libcurator-recipes-java libcurator-framework-java libjackson2-databind-java libslf4j-java); break; }; done # the Curator adapter's classpath
if ! ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1; then need+=(libfaketime); fi

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

explain() {
  echo "lockharness needs: ${need[*]}" >&2
  echo "$1" >&2
  echo "On Debian/Ubuntu, as root: apt-get update && apt-get install -y ${need[*]}" >&2
  echo "On macOS: brew install redis etcd libfaketime chromium (clock faults and the Linux-only process controls may not work)." >&2
  exit 1
}

if [ "$(uname -s)" != "Linux" ]; then explain "This is not Linux: install them yourself."; fi
if ! command -v apt-get >/dev/null 2>&1; then explain "There is no apt-get here: install them with your package manager."; fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=sudo
  else
    explain "Installing needs root: run this as root, or with sudo."
  fi
else
  SUDO=
fi

echo "installing: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian's redis packages may start system services; the harness starts its
# own servers on free ports and needs none of them.
for svc in redis-server redis-sentinel etcd mariadb zookeeper; do
  if command -v service >/dev/null 2>&1; then $SUDO service "$svc" stop >/dev/null 2>&1 || true; fi
done
