package adapter

import (
	"context"
	"io/fs"
)

// ShippedIn exposes shippedIn to the tests.
func ShippedIn(ctx context.Context, fsys fs.FS) ([]Spec, error) { return shippedIn(ctx, fsys) }
