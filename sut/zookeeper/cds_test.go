package zookeeper

import (
	"os"
	"path/filepath"
	"testing"
)

// ClassArchivePath and ClassPath are for the tests of package
// zookeeper_test.
var (
	ClassArchivePath = classArchivePath
	ClassPath        = classPath
)

// The class list keeps the classes, once each, and leaves out comments,
// lambda proxies, classes of other loaders and a last line cut short.
func TestLoadedClassesKeepsWholeClassLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "classes.lst")
	list := "# NOTE: Do not modify this file.\n#\njava/lang/Object id: 0\n" +
		"org/apache/zookeeper/server/quorum/QuorumPeerMain id: 1\n" +
		"java/lang/Object id: 0\n" +
		"@lambda-proxy java/lang/invoke/LambdaForm$MH 2\n" +
		"org/slf4j/Foo id: 7 super: 0 source: /some.jar\n" +
		"org/apache/zookeeper/Cut"
	if err := os.WriteFile(path, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := loadedClasses(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "java/lang/Object id: 0\norg/apache/zookeeper/server/quorum/QuorumPeerMain id: 1\n"
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if err := os.WriteFile(path, []byte("# only comments\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadedClasses(path); err == nil {
		t.Fatal("a list without classes gave no error")
	}
}
