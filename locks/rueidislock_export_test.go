package locks

import "github.com/redis/rueidis"

// RueidisClient is the hooked rueidis client of the rueidislock lock l,
// the one its library sends its scripts through: a test sends the
// library's scripts by hand through it, in an order it chooses.
func RueidisClient(l Lock) rueidis.Client { return l.(*rueidisLock).hook }
