package run

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"sync"
)

// UsageError is an error in the configuration: the CLI exits 2 and prints
// it. A problem of one field is a *FieldError inside it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ErrInterrupted is returned (with the outcome of the prefix that ran) when
// the run was cancelled before its end.
var ErrInterrupted = errors.New("run interrupted")

// FieldError is a value of one Config field that cannot run: the field
// by its path in Config ("Workload.TTL"), its value, what is wrong and
// how to put it right. Validate returns it inside a *UsageError.
//
// Problem and Fix name fields as {Path} or, followed by a value to give
// it, {Path value}. Error names them by their path ("Workload.TTL",
// "Workload.TTL=1s"); Text lets a caller name them otherwise: the command
// line names each by its flag ("--ttl", "--ttl 1s").
type FieldError struct {
	Field string
	Value any
	// Problem says what is wrong, in a sentence of its own ("{Workload.TTL}
	// must be positive, got 0s").
	Problem string
	// Fix says how to put it right; empty when Problem says it.
	Fix string
	// Err is the cause when another package found the problem (the lock
	// registry, the nemeses, the workload); Problem is then its message.
	Err error
}

func (e *FieldError) Error() string { return e.Text(nil) }
func (e *FieldError) Unwrap() error { return e.Err }

// Text is the error's message with each field named by name(path); a nil
// name, or one that returns "", names a field by its path.
func (e *FieldError) Text(name func(field string) string) string {
	s := render(e.Problem, name)
	if e.Fix != "" {
		s += ": " + render(e.Fix, name)
	}
	return s
}

// Text is err's message with the fields of the field error it holds, if
// any, named by name (see FieldError.Text): the command line prints every
// error of a run so, whatever wraps it.
func Text(err error, name func(field string) string) string {
	msg := err.Error()
	var fe *FieldError
	if errors.As(err, &fe) {
		msg = strings.Replace(msg, fe.Error(), fe.Text(name), 1)
	}
	return msg
}

// field is the usage error of a field whose value v fails.
func field(path string, v any, problem, fix string) error {
	return &UsageError{Err: &FieldError{Field: path, Value: v, Problem: problem, Fix: fix}}
}

// fieldErr is a field error another package found, its message kept as it
// is.
func fieldErr(path string, v any, err error) error {
	return &UsageError{Err: &FieldError{Field: path, Value: v, Problem: err.Error(), Err: err}}
}

// placeholder is {Path} or {Path value} in a FieldError's text.
var placeholder = regexp.MustCompile(`\{([A-Z][A-Za-z]*(?:\.[A-Z][A-Za-z]*)*)(?: ([^{}]+))?\}`)

// render names the fields of s by name (or their path). A brace that does
// not name a field of Config (a lock whose name has braces) is left alone.
func render(s string, name func(string) string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		path, value := sub[1], sub[2]
		if !isField(path) {
			return m
		}
		n := ""
		if name != nil {
			n = name(path)
		}
		switch {
		case n == "" && value != "":
			return path + "=" + value
		case n == "":
			return path
		case value != "":
			return n + " " + value
		}
		return n
	})
}

var fieldPaths = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			out[prefix+f.Name] = true
			if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() != "time" {
				walk(prefix+f.Name+".", f.Type)
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
	return out
})

// isField reports whether path names a field of Config ("Workload.TTL").
func isField(path string) bool { return fieldPaths()[path] }
