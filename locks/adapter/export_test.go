package adapter

import (
	"context"
	"io/fs"

	"github.com/lockharness/lockharness/sut"
)

// ShippedIn exposes shippedIn to the tests.
func ShippedIn(ctx context.Context, fsys fs.FS) ([]Spec, error) { return shippedIn(ctx, fsys) }

// FollowAddr is the address an adapter is given for node n (with
// nodeAddrs), and the function that closes what it opened.
func FollowAddr(n sut.ClientNode) (string, func(), error) {
	addrs, fs, err := nodeAddrs("test", []sut.ClientNode{n})
	if err != nil {
		return "", nil, err
	}
	return addrs[0].Addr, func() {
		for _, f := range fs {
			f.Close()
		}
	}, nil
}
