// Package docs is the manual: one markdown page per subject, linked from
// the README. It holds no code; its test checks that every relative link
// and anchor in README.md and docs/*.md leads somewhere, and that every
// page is reachable from the README.
package docs
