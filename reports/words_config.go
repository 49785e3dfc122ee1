package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// ConfigRow is one setting of a run as its report lists it: "TTL",
// "1 s".
type ConfigRow struct{ Name, Value string }

// durationKeys are the settings of a run's configuration (run.Config and
// the structs in it, by their JSON key) that are lengths of time: JSON
// has them in nanoseconds, people read "1.5 s". A test of package run
// checks that every time.Duration of its Config is here.
var durationKeys = map[string]bool{
	"TTL": true, "AcquireTimeout": true, "ClientPause": true, "Hold": true, "OpTimeout": true,
	"ClusterNodeTimeout": true, "SentinelDownAfter": true, "SentinelFailoverTimeout": true,
	"Interval": true, "Latency": true, "Jitter": true, "ClockBump": true, "StrobePeriod": true,
	"PauseDuration": true, "RestartDelay": true, "FailoverWindow": true, "HealTimeout": true,
	"time_limit": true, "recovery": true, "check_timeout": true, "client_timeout": true,
	"At": true, "LeaseLeft": true,
}

// IsDurationKey reports whether the configuration's setting of JSON key k
// is a length of time (in nanoseconds).
func IsDurationKey(k string) bool { return durationKeys[k] }

// configSkipped are the settings the configuration section leaves out:
// the page says them elsewhere (lock, seed, command, scenario), they are
// bookkeeping (store, test, the node directory) or derived from the rest
// (the nemesis's topology, the seeds copied into each part).
var configSkipped = map[string]bool{
	"lock": true, "seed": true, "Seed": true, "store": true, "test": true, "command": true,
	"scenario": true, "explanation": true, "expected": true, "Topology": true, "Names": true, "Dir": true,
}

// ConfigRows is a run's configuration (RunMeta.Config: the JSON of
// run.Config) as people read it: settings by name in words, one key
// case, lengths of time in seconds or milliseconds, unset (zero) settings
// left out, a setting that two parts share (the clients of the workload
// and of the cluster) once, the fault script and the required exposure
// in a sentence each. A configuration that is not a JSON object is one
// row of its text.
func ConfigRows(raw json.RawMessage) []ConfigRow {
	v, err := decodeOrdered(json.NewDecoder(bytes.NewReader(raw)))
	obj, ok := v.(ordered)
	if err != nil || !ok {
		return []ConfigRow{{Name: "configuration", Value: strings.TrimSpace(string(raw))}}
	}
	c := configCollector{seen: map[string]string{}}
	for _, kv := range obj {
		switch kv.k {
		case "script":
			c.add("", "fault script", scriptWords(kv.v))
		case "require":
			c.add("", "required exposure", requireWords(kv.v))
		case "nemesis":
			// A nemesis's tuning matters when it runs: the defaults of
			// nemeses not chosen are noise.
			if nemesisChosen(kv.v) {
				c.walk("", kv.k, kv.v)
			}
		default:
			c.walk("", kv.k, kv.v)
		}
	}
	return c.rows
}

// nemesisChosen reports whether the nemesis configuration v names any
// nemesis.
func nemesisChosen(v any) bool {
	obj, _ := v.(ordered)
	for _, kv := range obj {
		if kv.k == "Names" {
			return valueWords("", kv.v) != ""
		}
	}
	return false
}

// configCollector gathers the rows of ConfigRows.
type configCollector struct {
	rows []ConfigRow
	seen map[string]string // row name → value
}

// walk adds the rows of setting key (in section, "" at the top) of
// value v: an object's settings each, under the object's name.
func (c *configCollector) walk(section, key string, v any) {
	if configSkipped[key] {
		return
	}
	if obj, ok := v.(ordered); ok {
		for _, kv := range obj {
			c.walk(keyWords(key), kv.k, kv.v)
		}
		return
	}
	c.add(section, keyWords(key), valueWords(key, v))
}

// add adds a row unless its value is empty or a row of the same name
// says the same; a row of the same name that says otherwise is named
// with its section.
func (c *configCollector) add(section, name, value string) {
	if value == "" {
		return
	}
	if old, ok := c.seen[name]; ok {
		if old == value {
			return
		}
		name = strings.TrimSpace(section + " " + name)
	}
	c.seen[name] = value
	c.rows = append(c.rows, ConfigRow{Name: name, Value: value})
}

// valueWords writes a setting's value, "" when it is unset (zero, false,
// empty, null).
func valueWords(key string, v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		if x {
			return "yes"
		}
		return ""
	case json.Number:
		f, err := x.Float64()
		if err != nil || f == 0 {
			return ""
		}
		if durationKeys[key] {
			return fmtLength(time.Duration(f))
		}
		return x.String()
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			if s := valueWords("", e); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

// keyWords writes a JSON key in words, in lower case but for acronyms:
// "AcquireTimeout" and "acquire_timeout" are "acquire timeout", "TTL" is
// "TTL".
func keyWords(k string) string {
	var words []string
	var cur []rune
	rs := []rune(k)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == ' ':
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	for i, w := range words {
		if len(w) < 2 || strings.ToUpper(w) != w {
			words[i] = strings.ToLower(w)
		}
	}
	return strings.Join(words, " ")
}

// scriptWords tells a fault script in one sentence: "partition start at
// 0 s on c0->n4, c0->n5; clock bump at 2.3 s on n3 (delta +10s)".
func scriptWords(v any) string {
	steps, _ := v.([]any)
	var parts []string
	for i, s := range steps {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(steps)-8))
			break
		}
		obj, ok := s.(ordered)
		if !ok {
			continue
		}
		parts = append(parts, stepWords(obj))
	}
	return strings.Join(parts, "; ")
}

// stepWords tells one step of a fault script.
func stepWords(step ordered) string {
	var what, at, on, params string
	for _, kv := range step {
		switch kv.k {
		case "Nemesis":
			what = valueWords("", kv.v) + " " + what
		case "Action":
			what += valueWords("", kv.v)
		case "At":
			at = " at " + orSome(valueWords("At", kv.v), "0 s")
		case "Targets":
			if ts := valueWords("", kv.v); ts != "" {
				on = " on " + ts
			}
		case "Params":
			if obj, ok := kv.v.(ordered); ok {
				var ps []string
				for _, p := range obj {
					ps = append(ps, keyWords(p.k)+" "+valueWords(p.k, p.v))
				}
				params = " (" + strings.Join(ps, ", ") + ")"
			}
		}
	}
	return strings.TrimSpace(what) + at + on + params
}

// requireWords names the exposures a run required.
func requireWords(v any) string {
	reqs, _ := v.([]any)
	var names []string
	for _, r := range reqs {
		if obj, ok := r.(ordered); ok {
			for _, kv := range obj {
				if kv.k == "name" {
					names = append(names, valueWords("", kv.v))
				}
			}
		}
	}
	return andList(names)
}

// ordered is a JSON object with its keys in the order written.
type ordered []keyValue

type keyValue struct {
	k string
	v any
}

// decodeOrdered decodes the next JSON value of dec, objects as ordered
// and numbers as json.Number.
func decodeOrdered(dec *json.Decoder) (any, error) {
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		var obj ordered
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			obj = append(obj, keyValue{fmt.Sprint(kt), v})
		}
		_, err = dec.Token()
		return obj, err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err = dec.Token()
		return arr, err
	}
	return t, nil
}
