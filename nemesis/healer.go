package nemesis

import (
	"context"
	"errors"
	"strings"
)

// healer is a fault with state of its own on the nodes that the
// topology-wide heal cannot see (a node's memory limit), which it undoes
// itself in the final heal. heal must be idempotent.
type healer interface {
	heal(ctx context.Context, e *exec) (string, error)
}

// nothingToHeal is the deployment's heal's detail when nothing was broken.
const nothingToHeal = "nothing to heal"

// healOwn runs the heal of every fault that has one, in name order, and
// returns what they did.
func healOwn(ctx context.Context, e *exec, all map[string]fault, names []string) (string, error) {
	var did []string
	var errs []error
	for _, n := range names {
		h, ok := all[n].(healer)
		if !ok {
			continue
		}
		d, err := h.heal(ctx, e)
		if d != "" {
			did = append(did, d)
		}
		errs = append(errs, err)
	}
	return strings.Join(did, "; "), errors.Join(errs...)
}
