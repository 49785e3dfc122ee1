package nemesis

import (
	"context"
	"errors"
	"strings"
)

// nothingToHeal is the deployment's heal's detail when nothing was broken.
const nothingToHeal = "nothing to heal"

// healOwn runs the Heal of every fault that is a Healer, in name order,
// and returns what they did.
func healOwn(ctx context.Context, x *Exec, all map[string]Fault, names []string) (string, error) {
	var did []string
	var errs []error
	for _, n := range names {
		h, ok := all[n].(Healer)
		if !ok {
			continue
		}
		d, err := h.Heal(ctx, x)
		if d != "" {
			did = append(did, d)
		}
		errs = append(errs, err)
	}
	return strings.Join(did, "; "), errors.Join(errs...)
}
