package zookeeper

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// Class data sharing for ZooKeeper's own classes (AppCDS). The JDK's
// default archive covers the JDK's classes; ZooKeeper's and its logger's,
// about 2,000, were parsed and verified by each of an ensemble's three
// JVMs at every start. An archive of them, mapped by every server, cut an
// ensemble's start-up from 3.9 to 3.2 CPU-seconds and from 4.0 to 3.2s of
// wall (four rounds, a loaded two-core machine), and a ZooKeeper start-up
// is what leaves a machine without room for another scenario.
//
// The archive is built once per machine, from the classes a real server
// loaded: the first ensemble started without one has n1 write the list of
// classes it loads (-XX:DumpLoadedClassList), and once the ensemble
// serves, the list is dumped into an archive (java -Xshare:dump, about 2s)
// in the user's cache directory, under a name that hashes java's and the
// jars' paths, sizes and times; it is written aside and renamed into
// place, so concurrent builds are safe. The JVM checks the archive itself
// (its own build and the class path's jars): one that does not match is
// not used, and the server starts as it did without it. Nothing here
// fails a start: without an archive, the servers start as before.

// classArchive is the archive to start servers with (its path, empty when
// there is none yet) and, when there is none and no build is under way in
// this process, where n1 should write its class list (build true): the
// caller then calls buildClassArchive once the ensemble serves.
func classArchive(java, dir string) (archive, list string, build bool) {
	path, err := classArchivePath(java)
	if err != nil {
		return "", "", false
	}
	if _, err := os.Stat(path); err == nil {
		return path, "", false
	}
	if !archiveBuild.TryLock() {
		return "", "", false // another ensemble of this process builds it
	}
	return "", filepath.Join(dir, "classes.lst"), true
}

// archiveBuild is held from classArchive's build answer until
// buildClassArchive (or releaseClassArchive) returns.
var archiveBuild sync.Mutex

// releaseClassArchive gives up a build classArchive handed out.
func releaseClassArchive() { archiveBuild.Unlock() }

// buildClassArchive dumps the classes listed in list (written by a server
// started with -XX:DumpLoadedClassList) into the archive for java, and
// releases the build. Errors are returned for tests; a start ignores them.
func buildClassArchive(ctx context.Context, java, list string) error {
	defer releaseClassArchive()
	path, err := classArchivePath(java)
	if err != nil {
		return err
	}
	classes, err := loadedClasses(list)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	clean, err := os.CreateTemp(filepath.Dir(path), "zookeeper-classes-*.lst")
	if err != nil {
		return err
	}
	defer os.Remove(clean.Name())
	if _, err := clean.Write(classes); err != nil {
		clean.Close()
		return err
	}
	if err := clean.Close(); err != nil {
		return err
	}
	tmp := clean.Name() + ".jsa"
	defer os.Remove(tmp)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "-Xshare:dump", "-XX:SharedClassListFile="+clean.Name(),
		"-XX:SharedArchiveFile="+tmp, "-cp", classPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("zookeeper class archive: %s -Xshare:dump: %w: %s", java, err, lastLine(out))
	}
	return os.Rename(tmp, path)
}

// classLine is a line of a class list naming a class of the class path or
// the JDK ("org/apache/zookeeper/Foo", with " id: N" from JDK 17): lambda
// proxies, classes of other loaders and the comment lines are left out,
// as is a last line cut short by the server's end (it would fail the
// dump).
var classLine = regexp.MustCompile(`^[A-Za-z0-9_/$]+( id: [0-9]+)?$`)

// loadedClasses are the class lines of the class list at path.
func loadedClasses(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	complete := bytes.LastIndexByte(b, '\n')
	if complete < 0 {
		return nil, fmt.Errorf("zookeeper class archive: empty class list %s", path)
	}
	var out bytes.Buffer
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b[:complete+1]))
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := bytes.Cut([]byte(line), []byte(" "))
		if !classLine.MatchString(line) || seen[string(name)] {
			continue
		}
		seen[string(name)] = true
		out.WriteString(line + "\n")
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("zookeeper class archive: no classes in %s", path)
	}
	return out.Bytes(), nil
}

// classArchivePath is where java's archive of the class path lives: the
// user's cache directory (else the temporary one), under a hash of java's
// and the jars' real paths, sizes and modification times.
func classArchivePath(java string) (string, error) {
	h := sha256.New()
	for _, p := range []string{java, zookeeperJar, loggerJar} {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", err
		}
		fi, err := os.Stat(real)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", real, fi.Size(), fi.ModTime().UnixNano())
	}
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, "lockharness", "zookeeper-"+hex.EncodeToString(h.Sum(nil)[:8])+".jsa"), nil
}

// lastLine is the last non-empty line of out.
func lastLine(out []byte) string {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return string(lines[len(lines)-1])
}
