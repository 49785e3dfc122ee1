"""redis-py's own loop, the reference of BenchmarkRedisPy: cycles of
Lock.acquire (non-blocking) and Lock.release on 10 keys, one client, in
one process: the keys the protocol's side locks (bench-0 … bench-9). Each
line on stdin is a number of cycles to run; for each it prints the seconds
they took (startup excluded).

usage: redispy_loop.py HOST:PORT"""
import sys
import time

import redis

host, port = sys.argv[1].rsplit(":", 1)
client = redis.Redis(host=host, port=int(port), socket_timeout=0.5, socket_connect_timeout=0.5)
locks = [client.lock(f"bench-{i}", timeout=1.0, sleep=0.01) for i in range(10)]
client.ping()
for line in sys.stdin:
    n = int(line)
    start = time.perf_counter()
    for i in range(n):
        lk = locks[i % 10]
        if not lk.acquire(blocking=False):
            sys.exit(f"cycle {i}: not acquired")
        lk.release()
    print(time.perf_counter() - start, flush=True)
