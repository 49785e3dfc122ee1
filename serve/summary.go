package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lockharness/lockharness/checker"
	"github.com/lockharness/lockharness/reports"
)

// runSummary is what the list of runs shows of a results.json.
type runSummary struct {
	meta            reports.RunMeta
	verdict         checker.Verdict
	fatal, harmless int
}

// readSummary reads the summary of results.json from r, token by token,
// and stops as soon as it has the run's meta, verdict and violations,
// which come before the holds: whatever the run's length (a store
// written before holds.jsonl kept every hold in results.json), a request
// holds one violation at a time, never the file.
func readSummary(r io.Reader) (runSummary, error) {
	var sum runSummary
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return sum, fmt.Errorf("results.json is not an object (%v)", err)
	}
	need := map[string]bool{"meta": true, "verdict": true, "violations": true}
	for len(need) > 0 && dec.More() {
		t, err := dec.Token()
		if err != nil {
			return sum, err
		}
		key, _ := t.(string)
		delete(need, key)
		switch key {
		case "meta":
			err = dec.Decode(&sum.meta)
		case "verdict":
			err = dec.Decode(&sum.verdict)
		case "violations":
			err = countViolations(dec, &sum)
		default:
			err = skipValue(dec)
		}
		if err != nil {
			return sum, fmt.Errorf("results.json %s: %w", key, err)
		}
	}
	if need["verdict"] {
		return sum, errors.New("results.json has no verdict")
	}
	return sum, nil
}

// countViolations counts the violations of the array dec is at, one at
// a time.
func countViolations(dec *json.Decoder, sum *runSummary) error {
	t, err := dec.Token()
	if err != nil || t == nil {
		return err // null: none
	}
	if t != json.Delim('[') {
		return fmt.Errorf("not an array")
	}
	for dec.More() {
		var v struct {
			Fatal bool `json:"fatal"`
		}
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if v.Fatal {
			sum.fatal++
		} else {
			sum.harmless++
		}
	}
	_, err = dec.Token() // ]
	return err
}

// skipValue passes over the value dec is at, token by token.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
