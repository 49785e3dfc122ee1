package reports

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockharness/lockharness/checker"
)

// outDir is a temporary directory, or $REPORTS_KEEP/name when set, so that
// a person can look at what the tests drew.
func outDir(t testing.TB, name string) string {
	if keep := os.Getenv("REPORTS_KEEP"); keep != "" {
		dir := filepath.Join(keep, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return img
}

// isRed is the violation colour, allowing for anti-aliasing: strongly red,
// nothing else is.
func isRed(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r>>8 > 170 && g>>8 < 90 && b>>8 < 90
}

func countRed(img image.Image, r image.Rectangle) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if isRed(img.At(x, y)) {
				n++
			}
		}
	}
	return n
}

func TestRenderClockFixture(t *testing.T) {
	meta, ops, res := clockFixture()
	dir := outDir(t, "clock")
	if err := renderOps(context.Background(), dir, meta, ops, res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"timeline.png", "timeline.svg", "timeline-violation-1.png", "timeline-violation-1.svg",
		"latency.png", "latency.svg", "rate.png", "rate.svg", "porcupine-lock-0.html", "index.html"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	img := decodePNG(t, filepath.Join(dir, "timeline.png"))
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() < 260 {
		t.Errorf("timeline is %v, want 1200 px wide and at least 260 tall", b)
	}
}

// The overlap of clients 2 and 4 paints their rows red between 3.41 s and
// 3.97 s, and nowhere else.
func TestTimelineOverlapIsRedWhereItShouldBe(t *testing.T) {
	meta, ops, res := clockFixture()
	v := newRunView(meta, ops, res)
	dir := outDir(t, "clock-timeline")
	for _, tc := range []struct {
		name string
		win  window
	}{
		{"overview", window{From: 0, To: v.end, Title: "overview"}},
		{"zoom", zoomWindow(v, 0, res.Violations[0])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, h, fig, area := v.timeline(tc.win)
			if err := saveFigure(dir, tc.name, w, h, fig); err != nil {
				t.Fatal(err)
			}
			img := decodePNG(t, filepath.Join(dir, tc.name+".png"))
			wantW, wantH := int(w*DPI/72+0.5), int(h*DPI/72+0.5)
			if b := img.Bounds(); b.Dx() != wantW || b.Dy() != wantH {
				t.Fatalf("size %v, want %dx%d", b, wantW, wantH)
			}
			vi := res.Violations[0]
			mid := seconds((vi.Start + vi.End) / 2)
			for _, p := range []int{2, 4} {
				x, y := area.Pixel(mid, area.ClientY[p])
				if n := countRed(img, image.Rect(x-2, y-2, x+3, y+3)); n < 10 {
					t.Errorf("client %d's row at %.2f s (pixel %d,%d) has %d red pixels, want the overlap's red", p, mid, x, y, n)
				}
			}
			// Not on an uninvolved row (a row of neither 2 nor 4: client 3,
			// done before 4 starts, shares 4's), and not before the overlap.
			for p, py := range area.ClientY {
				if py == area.ClientY[2] || py == area.ClientY[4] {
					continue
				}
				x, y := area.Pixel(mid, py)
				if n := countRed(img, image.Rect(x-2, y-2, x+3, y+3)); n > 0 {
					t.Errorf("client %d's row is red at the overlap", p)
				}
			}
			x0, y2 := area.Pixel(seconds(vi.Start)-0.2, area.ClientY[2])
			if n := countRed(img, image.Rect(x0-2, y2-2, x0+3, y2+3)); n > 0 {
				t.Errorf("client 2's row is red before the overlap")
			}
		})
	}
}

// A harmless finding (a stale write that fencing rejected) is drawn, and
// its close-up too, but not in red: red means a violation.
func TestHarmlessFindingIsNotRed(t *testing.T) {
	meta, ops, res := validFixture()
	h := res.Holds[3]
	res.Violations = []checker.Violation{{Checker: "resource", Kind: checker.KindStaleWrite, Key: h.Key,
		Processes: []int{h.Process}, Start: h.End + 50*ms, End: h.End + 51*ms,
		Description: "process 1 wrote after its lease ended; storage rejected it (stale fencing token): harmless"}}
	dir := outDir(t, "harmless")
	if err := renderOps(context.Background(), dir, meta, ops, res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"timeline.png", "timeline-violation-1.png"} {
		img := decodePNG(t, filepath.Join(dir, f))
		if n := countRed(img, img.Bounds()); n > 0 {
			t.Errorf("%s of a valid run with a harmless finding has %d red pixels", f, n)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no violation", "1 harmless finding", "Client 1 wrote after its lease ended"} {
		if !strings.Contains(unlinkTerms(string(page)), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}

func TestValidRunHasNoRed(t *testing.T) {
	meta, ops, res := validFixture()
	dir := outDir(t, "valid")
	if err := renderOps(context.Background(), dir, meta, ops, res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"timeline.png", "latency.png", "rate.png"} {
		img := decodePNG(t, filepath.Join(dir, f))
		if n := countRed(img, img.Bounds()); n > 0 {
			t.Errorf("%s of a valid run has %d red pixels", f, n)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "timeline-violation-*")); len(m) > 0 {
		t.Errorf("close-ups of a run with no violation: %v", m)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`class="banner valid"`, "VALID", "harness run --lock token --seed 7", "timeline.png"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}

func TestIndexTellsTheViolationWithItsFaults(t *testing.T) {
	meta, ops, res := clockFixture()
	meta.Explanation = `Node 3's clock jumps <script>alert(1)</script>`
	page, dir := renderIndex(t, "clock-index", meta, ops, res)
	for _, want := range []string{
		`class="banner invalid"`,
		"Client 2 and client 4 both held lock-0 from 3.41 s to 3.97 s",
		"node 3&#39;s clock had jumped +60 s at 3.39 s", // LinkTerms escapes as html.EscapeString does
		"harness scenario run clock-jump --seed 42",
		"timeline-violation-1.png",
		"porcupine-lock-0.html",
		"&lt;script&gt;", // escaped
		"lock-promise",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "porcupine-lock-0.html")); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("porcupine view of lock-0: %v", err)
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("index.html does not escape the explanation")
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("index.html refers to an external asset")
	}
}

func TestFaultWindows(t *testing.T) {
	_, ops, _ := clockFixture()
	fs := faultsOf(ops)
	var got []string
	for _, f := range fs {
		got = append(got, f.Label+" "+fmtTime(f.Start)+"–"+fmtTime(f.End))
	}
	want := []string{
		"partition c0->n1, c1->n1 1.00 s–2.51 s",
		"clock +60 s on n3 3.39 s–7.01 s",
		"pause (SIGSTOP) n1 5.00 s–6.01 s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("faults:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNormalizeIsCanonical(t *testing.T) {
	a := checker.Result{
		Violations:          []checker.Violation{{Start: 5, Kind: "b"}, {Start: 1, Kind: "a"}},
		Holds:               []checker.Hold{{Start: 9, Process: 1}, {Start: 2, Process: 3}},
		NonLinearizableKeys: []string{"k2", "k1", "k2"},
	}
	b := Normalize(a)
	if a.Violations[0].Start != 5 || a.Holds[0].Start != 9 {
		t.Error("Normalize changed its argument")
	}
	if b.Violations[0].Start != 1 || b.Holds[0].Start != 2 || strings.Join(b.NonLinearizableKeys, ",") != "k1,k2" {
		t.Errorf("not normalized: %+v", b)
	}
	empty := Normalize(checker.Result{})
	if empty.Violations == nil || empty.Counts == nil || empty.Checkers == nil {
		t.Error("empty lists should become [] and {}")
	}
}

func rectAround(x, y, r int) image.Rectangle { return image.Rect(x-r, y-r, x+r+1, y+r+1) }
