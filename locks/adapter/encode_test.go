package adapter_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The redis-py adapter formats the answers of every cycle itself, for
// speed (docs/protocol.md); each line must be the bytes json.dumps makes,
// and any other answer must go through json.dumps.
func TestRedisPyEncodeIsJSONDumps(t *testing.T) {
	requirePython(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := `
import json, sys
sys.path.insert(0, "../../adapters/redispy")
import adapter
answers = [
    {"status": "ok", "id": 3},
    {"status": "ok", "lease": {"token": "0123456789abcdef", "validity_ms": 1000}, "id": 7},
    {"status": "ok", "lease": {"token": "a\"b\\c\u00e9\n", "validity_ms": 1}, "id": 8},
    {"status": "ok", "lease": {"token": "t", "validity_ms": 5}, "id": True},
    {"status": "ok", "lease": {"token": b"t".decode(), "validity_ms": 5.5}, "id": 9},
    {"status": "ok", "lease": {"validity_ms": 5, "fence": 1}, "id": 10},
    {"status": "ok", "lease": None, "id": 11},
    {"status": "ok", "adapter": adapter.ABOUT, "id": 1},
    {"status": "fail", "reason": "not held", "id": 2},
    {"status": "unknown", "reason": "TimeoutError: x", "id": 4},
]
for a in answers:
    got, want = adapter.encode(a), json.dumps(a).encode() + b"\n"
    if got != want:
        print("encode(%r) = %r, json.dumps makes %r" % (a, got, want))
`
	out, err := exec.CommandContext(ctx, python, "-c", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("%v\n%s", err, out)
	}
}
