#!/bin/sh
# Starts the Curator adapter (Adapter.java) on Debian's Java and jars. The
# source is compiled once per machine and version of the source, into
# $XDG_CACHE_HOME/lockharness/curator-<sha256> (under a lock, so that
# clients starting together compile it once; here, when the cache is not
# writable): javac costs seconds of CPU, paid by the first start only. The
# run's copy of the adapter (this directory) is the source that was run.
# The jars' Class-Path manifests bring in the rest (curator-client,
# curator-framework, guava, zookeeper, zookeeper-jute, slf4j-api). Logs
# (slf4j-simple) go to stderr: Curator's connection states at info, the
# rest at warn.
set -e
J=/usr/share/java
CP="$J/curator-recipes.jar:$J/jackson-databind.jar:$J/jackson-core.jar:$J/jackson-annotations.jar:$J/slf4j-simple.jar"
cd "$(dirname "$0")"
for jar in curator-recipes curator-framework curator-client zookeeper jackson-databind slf4j-simple; do
	[ -f "$J/$jar.jar" ] || { echo "missing $J/$jar.jar: apt-get install -y libcurator-recipes-java libcurator-framework-java libjackson2-databind-java libslf4j-java" >&2; exit 3; }
done
sum=$(sha256sum Adapter.java | cut -c1-16)
cache="${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/lockharness/curator-$sum"
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
	cache=$(pwd)
fi
(
	flock 9
	if [ ! -f "$cache/Adapter.class" ]; then
		rm -rf "$cache/build"
		javac -nowarn -cp "$CP" -d "$cache/build" Adapter.java >&2
		mv "$cache"/build/*.class "$cache"/
		rm -rf "$cache/build"
	fi
) 9>"$cache/.compile.lock"
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Xmx128m \
	-Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
	-Dorg.slf4j.simpleLogger.log.org.apache.curator.framework.state=info \
	-cp "$CP:$cache" Adapter
