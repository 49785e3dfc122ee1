package locks_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockharness/lockharness/locks"
	"github.com/lockharness/lockharness/sut"
	redisbackend "github.com/lockharness/lockharness/sut/redis"
)

// myLock is a user's own lock: SET NX PX with a fixed token per client and
// a release that checks it. To test it with the harness it implements
// locks.Lock and is registered under a name.
type myLock struct {
	node  sut.ClientNode
	ttl   time.Duration
	token string
}

var releaseScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end
return 0`)

func (l *myLock) Acquire(ctx context.Context, key string, _ locks.AcquireOptions) (locks.Lease, error) {
	lease := locks.Lease{Key: key, Token: l.token}
	start := time.Now() // before the SET: the server's expiry is no earlier
	err := l.node.Client.SetArgs(ctx, key, l.token, redis.SetArgs{Mode: "NX", TTL: l.ttl}).Err()
	if errors.Is(err, redis.Nil) {
		return lease, locks.ErrNotAcquired // held by someone else: a definite no
	}
	if err != nil {
		return lease, err // a timeout: the outcome is unknown
	}
	lease.ValidUntil = start.Add(l.ttl)
	return lease, nil
}

func (l *myLock) Release(ctx context.Context, lease locks.Lease) error {
	n, err := releaseScript.Run(ctx, l.node.Client, []string{lease.Key}, lease.Token).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return locks.ErrNotHeld
	}
	return nil
}

// Register a lock of your own next to the built-in ones, then build one
// instance per client over that client's nodes, as the workload does.
func Example_customLock() {
	reg := locks.Builtin()
	err := reg.Register(locks.Info{
		Name:        "mylock",
		Description: "SET NX PX with a per-client token",
		MaxNodes:    1,
		New: func(nodes []sut.ClientNode, opts locks.Options) (locks.Lock, error) {
			opts = opts.WithDefaults()
			return &myLock{node: nodes[0], ttl: opts.TTL, token: fmt.Sprintf("client-%d", opts.Rand.Uint64())}, nil
		},
	})
	fmt.Println("registered:", err == nil)

	ctx := context.Background()
	c, err := redisbackend.Up(ctx, sut.Config{Nodes: 1, Clients: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Down()
	info, _ := reg.Lookup("mylock")
	var clients []locks.Lock
	for cl := 0; cl < 2; cl++ {
		nodes := c.ClientNodes(cl, sut.ClientOptions{})
		defer sut.CloseClientNodes(nodes)
		l, _ := info.New(nodes, locks.Options{TTL: time.Second})
		clients = append(clients, l)
	}

	lease, err := clients[0].Acquire(ctx, "k", locks.AcquireOptions{})
	fmt.Println("acquired:", err == nil, "expires:", lease.Expires())
	_, err = clients[1].Acquire(ctx, "k", locks.AcquireOptions{})
	fmt.Println("second acquire:", err, "→", locks.Outcome(err))
	fmt.Println("released:", clients[0].Release(ctx, lease) == nil)
	// Output:
	// registered: true
	// acquired: true expires: true
	// second acquire: lock not acquired → fail
	// released: true
}
