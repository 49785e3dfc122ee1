package run

import "strings"

// CommandLine is the command line of args as a POSIX shell reads it back:
// each argument that is not made only of characters no shell treats
// specially is put in single quotes (a quote inside it closed, escaped
// and opened again), and an empty one is an empty pair of quotes. Every
// reproduce line (Config.Command: `harness run`'s, a matrix cell's, a
// scenario's) is built with it, so that one pasted into a shell runs the
// same command: a --store with a space no longer splits in two, one with
// ';' no longer runs a second command, and --nemesis "" is not lost.
func CommandLine(args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// shellQuote is a as one word of a POSIX shell.
func shellQuote(a string) string {
	if a != "" && strings.IndexFunc(a, func(r rune) bool { return !shellSafe(r) }) < 0 {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// shellSafe reports whether r means itself to a shell wherever it is in a
// word (and not as the first character only: '=' and '~' are safe there,
// but '~' is not at the start, so it is left out).
func shellSafe(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("-_./:,+=@%", r)
}
