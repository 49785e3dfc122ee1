package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockharness/lockharness/sut"
)

// ErrMissingBinary is wrapped when a program a deployment needs
// (redis-server, etcd, java, …) is not on PATH.
var ErrMissingBinary = errors.New("missing binary")

// ErrPortBusy is wrapped when a requested port is already in use.
var ErrPortBusy = errors.New("port busy")

// LookBinary finds a program on PATH, with an error that says how to
// install it (hint).
func LookBinary(name, hint string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found on PATH; %s", ErrMissingBinary, name, hint)
	}
	return p, nil
}

// Server is one server process of a local deployment (a redis-server, an
// etcd member, a JVM running ZooKeeper, a mariadbd): its port, its own
// directory and config, and its process, which can be stopped, paused,
// killed and restarted on the same port. What is the system's own is given
// by its backend: the program and its Args or Config, the Ready probe that
// says it answers, and the ClockProbe that reads its clock.
type Server struct {
	Name string
	Port int
	Dir  string
	// Binary is the path of the program.
	Binary string
	// Config is the content of the config file written into Dir before each
	// start (a Sentinel rewrites it, so it is written afresh).
	Config string
	// Env is added to the environment of the process (LD_PRELOAD for
	// libfaketime).
	Env []string
	// ClockFile, when set, is the libfaketime control file the server reads
	// its clock offset and rate from (Env must preload libfaketime).
	ClockFile string
	// Args, when set, are the program's arguments instead of the config
	// file's path (a server configured by flags).
	Args []string
	// Ready says whether the server answers (Redis's PING, etcd's health,
	// a query); WaitReady polls it every ReadyEvery (50ms when zero). A
	// Ready error that wraps ErrPortBusy ends the wait at once.
	Ready      func(ctx context.Context) error
	ReadyEvery time.Duration
	// ClockProbe reads the server's own clock: how far it is ahead of this
	// process's, and the round trip of the reading (ServerTime,
	// ConfirmClock).
	ClockProbe func(ctx context.Context, timeout time.Duration) (skew, rtt time.Duration, err error)
	// Output, when set, sends the process's stdout and stderr to LogPath
	// (appended), for a server that logs there instead of to its own file.
	Output bool

	mu        sync.Mutex
	cmd       *exec.Cmd
	exit      chan struct{} // closed when the current process has been reaped
	killing   *exec.Cmd     // the process Kill is ending: its exit is planned
	onExit    func(sut.Exit)
	paused    bool
	clock     sut.Clock
	startedAt time.Time // when libfaketime (roughly) took its start instant
}

// Addr is the server's direct address (not through any proxy).
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// ConfigPath is where the config file is written.
func (s *Server) ConfigPath() string { return filepath.Join(s.Dir, s.Name+".conf") }

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.Dir, s.Name+".log") }

// PID is the current process id, or 0 when not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Running reports whether the process is alive (possibly stopped by SIGSTOP).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exit == nil {
		return false
	}
	select {
	case <-s.exit:
		return false
	default:
		return true
	}
}

// Start writes the config and starts the process, then waits until it
// answers (Ready; with wait false, it returns at once).
func (s *Server) Start(ctx context.Context, wait bool) error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	if err := os.WriteFile(s.ConfigPath(), []byte(s.Config), 0o644); err != nil {
		return fmt.Errorf("start %s: write config: %w", s.Name, err)
	}
	if s.Faked() {
		// libfaketime's rate is relative to the instant the process loads
		// it, so the file is rewritten for every new process.
		s.mu.Lock()
		s.startedAt = time.Now()
		err := s.writeClockLocked()
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("start %s: %w", s.Name, err)
		}
	}
	args := s.Args
	if args == nil {
		args = []string{s.ConfigPath()}
	}
	cmd := exec.Command(s.Binary, args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.Env...)
	if s.Output {
		f, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("start %s: %w", s.Name, err)
		}
		defer f.Close() // the child has its own descriptor
		cmd.Stdout, cmd.Stderr = f, f
	}
	// The child dies with the harness even when the harness is SIGKILLed,
	// and gets its own process group so a Ctrl-C at the terminal reaches
	// only the harness, which then tears down in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	exit := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exit, s.paused = cmd, exit, false
	s.mu.Unlock()
	go s.reap(cmd, exit)
	if !wait {
		return nil
	}
	return s.WaitReady(ctx, 10*time.Second)
}

// reap waits for cmd to end, marks its exit, and, when the harness did
// not end it (Kill), tells the watcher (WatchExits).
func (s *Server) reap(cmd *exec.Cmd, exit chan struct{}) {
	err := cmd.Wait()
	close(exit)
	s.mu.Lock()
	planned, f := s.killing == cmd, s.onExit
	s.mu.Unlock()
	if planned || f == nil {
		return
	}
	how := "exited"
	if err != nil {
		how = err.Error() // "signal: killed", "exit status 1"
	}
	// A process that ended itself may have said why; one killed by a
	// signal did not, and an old error line would mislead.
	if st := cmd.ProcessState; st != nil && st.Exited() {
		if cause := causes(lastLinesOr(s.LogPath())); len(cause) > 0 {
			how += ": " + clip(cause[len(cause)-1])
		}
	}
	f(sut.Exit{Node: s.Name, How: how})
}

// WatchExits has f called for every exit of the server's process that Kill
// did not cause (sut.ExitWatcher): killed from outside, or crashed.
func (s *Server) WatchExits(f func(sut.Exit)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onExit = f
}

// WaitReady polls Ready until it succeeds, the process exits, or timeout
// passes. A Ready error that wraps ErrPortBusy ends the wait at once.
func (s *Server) WaitReady(ctx context.Context, timeout time.Duration) error {
	if s.Ready == nil {
		return fmt.Errorf("start %s: no readiness probe (Server.Ready)", s.Name)
	}
	deadline := time.Now().Add(timeout)
	s.mu.Lock()
	exit := s.exit
	s.mu.Unlock()
	every := s.ReadyEvery
	if every == 0 {
		// Often enough for a probe that costs something (a client
		// connection, a query).
		every = 50 * time.Millisecond
	}
	for {
		err := s.Ready(ctx)
		if err == nil {
			// Someone answers: make sure it is our process that listens
			// (see listenerOwned). Between choosing a free port and binding
			// it, another deployment's server may have taken it; then ours
			// exits, and the answer was the other's.
			if owned, known := listenerOwned(s.PID(), s.Port); known && !owned {
				return fmt.Errorf("start %s: %w: 127.0.0.1:%d answers, but the listener is not our process's (%d): another server took the port", s.Name, ErrPortBusy, s.Port, s.PID())
			}
			return nil
		}
		if errors.Is(err, ErrPortBusy) {
			return fmt.Errorf("start %s: %w", s.Name, err)
		}
		select {
		case <-exit:
			tail := s.logTail()
			if strings.Contains(strings.ToLower(tail), "address already in use") {
				return fmt.Errorf("start %s: %w: 127.0.0.1:%d taken by another process: %s", s.Name, ErrPortBusy, s.Port, tail)
			}
			return fmt.Errorf("start %s on port %d: process exited: %s", s.Name, s.Port, tail)
		case <-ctx.Done():
			return fmt.Errorf("start %s: %w", s.Name, ctx.Err())
		case <-time.After(every):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start %s on port %d: no PONG after %v: %s", s.Name, s.Port, timeout, s.logTail())
		}
	}
}

// logTail is what a start error quotes from the server's log (LogTail).
func (s *Server) logTail() string { return LogTail(s.LogPath()) }

// Signal sends sig to the process (SIGSTOP, SIGCONT, …).
func (s *Server) Signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return fmt.Errorf("signal %s: not running", s.Name)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %s: %w", s.Name, err)
	}
	return nil
}

// Kill sends SIGKILL (after SIGCONT, in case it was paused) and waits until
// the process is reaped. Killing a server that is not running is a no-op.
func (s *Server) Kill() error {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	s.mu.Lock()
	s.killing = cmd
	s.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exit:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill %s (pid %d): not reaped after 10s", s.Name, cmd.Process.Pid)
	}
	s.mu.Lock()
	if s.cmd == cmd {
		s.cmd, s.paused = nil, false
	}
	s.mu.Unlock()
	return nil
}

// Pause stops the process with SIGSTOP. The kernel still accepts new TCP
// connections for it; commands hang until Resume.
func (s *Server) Pause() error {
	if err := s.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	s.mu.Lock()
	s.paused = true
	s.mu.Unlock()
	return nil
}

// Resume continues a paused process with SIGCONT. Resuming a server that is
// not paused (or not running) is a no-op.
func (s *Server) Resume() error {
	s.mu.Lock()
	paused := s.paused
	s.mu.Unlock()
	if !paused {
		return nil
	}
	if err := s.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	s.mu.Lock()
	s.paused = false
	s.mu.Unlock()
	return nil
}

// Paused reports whether the process is stopped by Pause.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused && s.cmd != nil
}

// Restart starts the server again on the same port, with the same
// directory (so whatever it persisted there is loaded) and its current
// Config, and waits until it answers (Ready). It kills the process first
// if it is still running.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Kill(); err != nil {
		return err
	}
	return s.Start(ctx, true)
}
