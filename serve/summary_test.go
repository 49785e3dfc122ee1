package serve

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestSummaryReadsOnlyTheHead: the list's summary of a results.json of
// an old store, whose 200,000 holds follow the findings, is its meta,
// verdict and counts of violations and harmless findings, read from the
// head of the file: the holds are never read.
func TestSummaryReadsOnlyTheHead(t *testing.T) {
	res := checker.Result{Verdict: checker.Invalid, Checkers: map[string]checker.CheckResult{}, Violations: []checker.Violation{
		{Kind: checker.KindOverlap, Fatal: true}, {Kind: checker.KindStaleWrite}, {Kind: checker.KindOverlap, Fatal: true}}}
	for i := range 200_000 {
		res.Holds = append(res.Holds, checker.Hold{Process: i % 7, Key: "lock-0", Start: int64(i), End: int64(i + 1)})
	}
	var buf bytes.Buffer
	meta := reports.RunMeta{Test: "old", Lock: "token", Start: time.Unix(1e9, 0).UTC()}
	if err := reports.EncodeResults(&buf, reports.Results{Meta: meta, Result: res}); err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{r: bytes.NewReader(buf.Bytes())}
	sum, err := readSummary(cr)
	if err != nil {
		t.Fatal(err)
	}
	if sum.verdict != checker.Invalid || sum.fatal != 2 || sum.harmless != 1 || sum.meta.Lock != "token" || !sum.meta.Start.Equal(meta.Start) {
		t.Fatalf("summary %+v", sum)
	}
	if cr.n > 64<<10 {
		t.Fatalf("read %d bytes of %d for the summary", cr.n, buf.Len())
	}
	for _, bad := range []string{`[]`, `{"meta": {}}`, `{"verdict": "valid", "violations": 3}`} {
		if _, err := readSummary(bytes.NewReader([]byte(bad))); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
