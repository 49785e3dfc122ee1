package synth

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockharness/lockharness/history"
)

// BenchmarkScan reads a synthetic history of each shape (1M events, a
// quarter under -short) with the history's own scanner, as the check
// does, and BenchmarkPlainParse decodes the same file line by line with
// encoding/json into history.Op, keeping nothing: issue 27's "plain
// JSON-lines parse", which the check's CPU is compared with.
func BenchmarkScan(b *testing.B) {
	for _, shape := range Shapes {
		b.Run(string(shape), func(b *testing.B) {
			path, n := benchFile(b, shape)
			b.ResetTimer()
			for b.Loop() {
				if _, err := history.File(path).Each(context.Background(), func(*history.Op) bool { return true }); err != nil {
					b.Fatal(err)
				}
			}
			report(b, n)
		})
	}
}

func BenchmarkPlainParse(b *testing.B) {
	for _, shape := range Shapes {
		b.Run(string(shape), func(b *testing.B) {
			path, n := benchFile(b, shape)
			b.ResetTimer()
			for b.Loop() {
				if err := plainParse(path); err != nil {
					b.Fatal(err)
				}
			}
			report(b, n)
		})
	}
}

func plainParse(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, history.MaxLine), history.MaxLine)
	for sc.Scan() {
		var op history.Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return err
		}
	}
	return sc.Err()
}

// benchFile writes a history of the shape to a file.
func benchFile(b *testing.B, shape Shape) (string, int64) {
	events := 1_000_000
	if testing.Short() {
		events /= 4
	}
	path := filepath.Join(b.TempDir(), "history.jsonl")
	n, err := WriteFile(path, Config{Shape: shape, Events: events, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return path, n
}

func report(b *testing.B, n int64) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
