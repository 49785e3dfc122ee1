package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cause line is found whatever the system's way of saying it, and the
// strongest one wins over a later, weaker one.
func TestLogTailQuotesTheCause(t *testing.T) {
	stack := "goroutine 1 [running]:\nmain.main()\n\t/src/main.go:10 +0x1d\nexit status 2\n"
	cases := []struct{ name, log, want string }{
		{"go panic", "starting\nready soon\npanic: cannot open database (cannot allocate memory)\n\n" + stack, "panic: cannot open database (cannot allocate memory)"},
		{"go fatal", "x\nfatal error: runtime: out of memory\n" + stack, "fatal error: runtime: out of memory"},
		{"zap record", `{"level":"info","msg":"starting"}` + "\n" + `{"level":"panic","ts":"t","caller":"c","msg":"failed to open database","error":"invalid database","stacktrace":"s"}` + "\npanic: failed to open database\n" + stack,
			"panic: failed to open database: invalid database"},
		{"redis", "1:M 27 Nov # Fatal error, can't open config file '/x.conf': No such file or directory\n1:M 27 Nov a\n1:M b\n1:M c\n", "# Fatal error, can't open config file"},
		{"mariadb", "[ERROR] Can't start server: Bind on TCP/IP port: Address already in use\n[ERROR] Do you already have another server running?\n[ERROR] Aborting\nInnoDB: shutdown\nx\ny\n", "[ERROR] Aborting"},
		{"panic beats a later error", "panic: the cause\nerror: a consequence\na\nb\nc\n", "panic: the cause"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.log")
			if err := os.WriteFile(p, []byte(c.log), 0o644); err != nil {
				t.Fatal(err)
			}
			got := LogTail(p)
			if !strings.Contains(got, c.want) || !strings.Contains(got, p) {
				t.Fatalf("LogTail = %q, want it to quote %q and name the log", got, c.want)
			}
		})
	}
}

// Only the end of a huge log is read, and a long line is cut.
func TestLogTailIsBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.log")
	var b strings.Builder
	b.WriteString("panic: an old run's panic, far back\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	b.WriteString("error: " + strings.Repeat("é", 1000) + "\nlast\n")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := LogTail(p)
	if strings.Contains(got, "far back") {
		t.Errorf("read beyond the window: %q", got)
	}
	if !strings.Contains(got, "error: é") || len(got) > 2*maxLineLen+200 {
		t.Errorf("LogTail = %d bytes: %q", len(got), got)
	}
	if !strings.Contains(LogTail(filepath.Join(t.TempDir(), "none")), "no log") {
		t.Error("a missing log is not said")
	}
}
