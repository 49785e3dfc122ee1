package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestLinks: every relative link in README.md and docs/*.md names a file or
// directory of the repository, and every anchor (#section) names a heading
// or an explicit <a id> of the page it points into.
func TestLinks(t *testing.T) {
	pages := manualPages(t)
	anchors := map[string][]string{}
	for _, p := range pages {
		anchors[p] = pageAnchors(readPage(t, p))
	}
	for _, p := range pages {
		for _, l := range pageLinks(readPage(t, p)) {
			if err := checkLink(p, l, anchors); err != nil {
				t.Errorf("%s:%d: link %q: %v", p, l.line, l.target, err)
			}
		}
	}
}

// TestEveryPageLinkedFromReadme: the README is the front door; a page of
// the manual nobody links to is a page nobody finds.
func TestEveryPageLinkedFromReadme(t *testing.T) {
	readme := filepath.Join("..", "README.md")
	linked := map[string]bool{}
	for _, l := range pageLinks(readPage(t, readme)) {
		path, _, _ := strings.Cut(l.target, "#")
		linked[filepath.Clean(filepath.Join("..", path))] = true
	}
	for _, p := range manualPages(t) {
		if p != readme && !linked[p] {
			t.Errorf("%s is not linked from README.md", p)
		}
	}
}

// TestPageAnchors pins the heading-to-anchor rule to GitHub's.
func TestPageAnchors(t *testing.T) {
	page := "# Run it in Docker\n## 1. A client outlives its lease (Kleppmann, \"Protecting\")\n" +
		"```\n# not a heading\n```\n## `harness matrix`: nightly\n## Soak\n## Soak\n| <a id=\"wrong-release\"></a>`x` |\n"
	got := pageAnchors(page)
	want := []string{"run-it-in-docker", "1-a-client-outlives-its-lease-kleppmann-protecting",
		"harness-matrix-nightly", "soak", "soak-1", "wrong-release"}
	if !slices.Equal(got, want) {
		t.Errorf("anchors %q, want %q", got, want)
	}
	links := pageLinks("see [a](b.md#c) and `[not](a link)`\n```\n[nor](this)\n```\n[d](https://x.org) [e](#f \"title\")\n")
	var targets []string
	for _, l := range links {
		targets = append(targets, l.target)
	}
	if want := []string{"b.md#c", "https://x.org", "#f"}; !slices.Equal(targets, want) {
		t.Errorf("links %q, want %q", targets, want)
	}
}

// manualPages are README.md and docs/*.md, as paths from this directory.
func manualPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no pages in docs/")
	}
	for i, p := range pages {
		pages[i] = filepath.Join("..", "docs", p)
	}
	return append(pages, filepath.Join("..", "README.md"))
}

func readPage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type link struct {
	target string
	line   int
}

var (
	inlineLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	explicitID = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
)

// pageLinks finds the targets of inline links [text](target) outside code
// blocks and code spans.
func pageLinks(page string) []link {
	var out []link
	eachLine(page, func(n int, line string) {
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, link{target: m[1], line: n})
		}
	})
	return out
}

// pageAnchors lists the anchors GitHub gives a page: one per heading (a
// repeated one gets -1, -2, …) and each explicit <a id="…">.
func pageAnchors(page string) []string {
	var out []string
	seen := map[string]int{}
	eachLine(page, func(_ int, line string) {
		if h, ok := heading(line); ok {
			a := slug(h)
			if n := seen[a]; n > 0 {
				seen[a]++
				a = fmt.Sprintf("%s-%d", a, n)
			} else {
				seen[a] = 1
			}
			out = append(out, a)
		}
		for _, m := range explicitID.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	})
	return out
}

// eachLine calls f with each line outside fenced code blocks.
func eachLine(page string, f func(n int, line string)) {
	fenced := false
	for i, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			f(i+1, line)
		}
	}
}

func heading(line string) (string, bool) {
	trimmed := strings.TrimLeft(line, "#")
	level := len(line) - len(trimmed)
	if level == 0 || level > 6 || !strings.HasPrefix(trimmed, " ") {
		return "", false
	}
	return strings.TrimSpace(trimmed), true
}

var mdLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor for a heading: its text lower-cased, without
// punctuation, spaces as hyphens.
func slug(h string) string {
	h = mdLink.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkLink resolves a link of page: an absolute URL is not checked; a
// path must exist; an anchor into a page of the manual must be one of its
// anchors.
func checkLink(page string, l link, anchors map[string][]string) error {
	if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
		return nil
	}
	path, anchor, _ := strings.Cut(l.target, "#")
	dest := page
	if path != "" {
		dest = filepath.Clean(filepath.Join(filepath.Dir(page), path))
		if _, err := os.Stat(dest); err != nil {
			return fmt.Errorf("no such file or directory %s", dest)
		}
		if rel, err := filepath.Rel("..", dest); err != nil || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("%s is outside the repository", dest)
		}
	}
	if anchor == "" {
		return nil
	}
	list, ok := anchors[dest]
	if !ok {
		if strings.HasSuffix(dest, ".md") {
			return fmt.Errorf("anchor #%s into %s, which is not a page of the manual", anchor, dest)
		}
		return nil // a line anchor into source (#L10) and the like
	}
	if !slices.Contains(list, anchor) {
		return fmt.Errorf("%s has no anchor #%s", dest, anchor)
	}
	return nil
}
