package matrix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/nemesis"
)

var workflow = filepath.Join("..", ".github", "workflows", "nightly.yml")

// actionlintVersion is pinned so that the check does not change under us;
// `go run pkg@version` fetches it through the module proxy without making
// it a requirement of go.mod (a linter is not a dependency of the harness).
const actionlintVersion = "v1.7.12"

// The nightly workflow passes actionlint (GitHub Actions' linter: syntax,
// expressions, action inputs, shell scripts through shellcheck when that is
// installed). It is skipped, with the reason, when actionlint cannot be
// fetched (no network to the Go module proxy).
func TestNightlyWorkflowLints(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches actionlint through the Go module proxy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "github.com/rhysd/actionlint/cmd/actionlint@"+actionlintVersion, "-no-color", workflow)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	if fetchFailed.Match(out) {
		t.Skipf("cannot fetch actionlint %s: %s", actionlintVersion, firstLine(out))
	}
	t.Fatalf("actionlint %s: %v\n%s", workflow, err, out)
}

// fetchFailed recognises `go run` failing before actionlint ran.
var fetchFailed = regexp.MustCompile(`(?m)^go: .*(dial tcp|no such host|i/o timeout|proxy|GOPROXY|GOFLAGS=-mod=vendor|module lookup disabled|connection refused|TLS)`)

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// The workflow's shards are 1…SHARDS, and every cell it runs has a rule in
// the shipped expectations file.
func TestNightlyWorkflowMatchesItsMatrix(t *testing.T) {
	b, err := os.ReadFile(workflow)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Env  map[string]string `yaml:"env"`
		Jobs struct {
			Shard struct {
				Strategy struct {
					Matrix struct {
						Shard []int `yaml:"shard"`
					} `yaml:"matrix"`
				} `yaml:"strategy"`
			} `yaml:"shard"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(wf.Env["SHARDS"])
	if err != nil {
		t.Fatalf("SHARDS: %v", err)
	}
	shards := wf.Jobs.Shard.Strategy.Matrix.Shard
	if len(shards) != n {
		t.Fatalf("the job matrix lists %d shards, SHARDS is %d", len(shards), n)
	}
	for i, s := range shards {
		if s != i+1 {
			t.Errorf("shard list %v is not 1…%d", shards, n)
		}
	}
	e, err := ReadExpectations(context.Background(), "expectations.yaml", KnownNames(locks.Builtin(), nemesis.Builtin()))
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Name: "matrix", Backend: DefaultBackend, Locks: strings.Split(wf.Env["LOCKS"], ","),
		Nemeses: ParseNemesisSets(strings.Split(wf.Env["NEMESES"], ",")), Seeds: SeedRange(3), Expect: e}
	for _, c := range s.Cells() {
		if e.For(c).Expect == "" {
			t.Errorf("the workflow runs %s, which no expectation covers", c.ID())
		}
	}
}
