package schedule

import (
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// wrapWidth is the width Write wraps the explanation at.
const wrapWidth = 96

// Write writes s as a schedule file, text normalised: the summary on one
// line, the explanation as a block of paragraphs wrapped for reading.
// Parse(Write(s)) gives s back (normalised).
func Write(w io.Writer, s Schedule) error {
	s = s.normal()
	var root yaml.Node
	if err := root.Encode(s); err != nil {
		return fmt.Errorf("encode schedule: %w", err)
	}
	if v := mapValue(&root, "explanation"); v != nil {
		v.Value = wrapParagraphs(s.Explanation, wrapWidth)
		v.Style = yaml.LiteralStyle
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return fmt.Errorf("write schedule: %w", err)
	}
	return enc.Close()
}

// mapValue is the value of key in mapping n.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// wrapParagraphs wraps each paragraph of s at width, a blank line between
// paragraphs.
func wrapParagraphs(s string, width int) string {
	var out []string
	for _, p := range strings.Split(s, "\n\n") {
		var b strings.Builder
		n := 0
		for _, word := range strings.Fields(p) {
			switch {
			case n == 0:
			case n+1+len(word) > width:
				b.WriteString("\n")
				n = 0
			default:
				b.WriteString(" ")
				n++
			}
			b.WriteString(word)
			n += len(word)
		}
		out = append(out, b.String())
	}
	return strings.Join(out, "\n\n")
}
