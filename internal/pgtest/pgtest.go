package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fiomig/fiomig/internal/tooltest"
)

// Server is a running PostgreSQL server.
type Server struct {
	// URL is a connection string for database "postgres" as superuser
	// "postgres" (trust authentication, loopback only, no TLS).
	URL  string
	Port int
	dir  string
	cred *syscall.Credential
	bin  string
}

// binDir finds Debian's server binaries: /usr/lib/postgresql/<major>/bin
// (the newest major), else initdb and postgres on PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return a > b
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	p, err := exec.LookPath("postgres")
	if err != nil {
		return "", fmt.Errorf("PostgreSQL server not found (/usr/lib/postgresql/*/bin/postgres or postgres on PATH; Debian package postgresql): %w", err)
	}
	return filepath.Dir(p), nil
}

// Start starts a server for tb and stops it when tb ends. A missing server
// or postgres user skips tb with the reason (fails under
// FIOMIG_REQUIRE_TOOLS=1); a server that does not come up within a minute
// fails tb with its log.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := binDir()
	tooltest.Require(tb, err)
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tooltest.Require(tb, fmt.Errorf("running as root and no postgres user to run the server as (Debian's postgresql package creates it): %w", err))
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not tb.TempDir(): its parents are private to root, and the server
	// may run as another user.
	s.dir, err = os.MkdirTemp("", "fiomig-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(s.dir) })
	if err := os.Chmod(s.dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.command("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	s.Port, err = freePort()
	if err != nil {
		tb.Fatal(err)
	}
	var log bytes.Buffer
	cmd := s.command("postgres", "-D", data, "-p", strconv.Itoa(s.Port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start postgres: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(time.Minute)
	for !ready(filepath.Join(data, "postmaster.pid")) {
		select {
		case err := <-exited:
			tb.Fatalf("postgres exited: %v\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("postgres not ready after a minute:\n%s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
	return s
}

// Database creates database name on s and returns its connection string.
func (s *Server) Database(tb testing.TB, name string) string {
	tb.Helper()
	out, err := s.command("psql", "-h", s.dir, "-p", strconv.Itoa(s.Port), "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1",
		"-c", "CREATE DATABASE "+name).CombinedOutput()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			tooltest.Require(tb, err)
		}
		tb.Fatalf("create database %s: %v\n%s", name, err, out)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, name)
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if _, err := os.Stat(path); err != nil {
		if p, err := exec.LookPath(name); err == nil {
			path = p
		}
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// ready reports whether postmaster.pid says the server accepts
// connections: PostgreSQL 10 and later write the postmaster's status as
// the file's 8th line, "ready" once it accepts connections.
func ready(pidfile string) bool {
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return false
	}
	lines := strings.Split(string(b), "\n")
	return len(lines) >= 8 && strings.TrimSpace(lines[7]) == "ready"
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
