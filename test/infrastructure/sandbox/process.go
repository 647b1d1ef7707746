package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// process is one supervised child: its own process group, log file and pid file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	pidPath string
	done    chan struct{}
	err     error // set before done is closed
}

// startProcess starts bin in its own process group with stdout and stderr in
// <state>/logs/<name>.log and its pid in <state>/pids/<name>.pid.
func (s *Sandbox) startProcess(name, bin string, args, env []string) (*process, error) {
	logPath := filepath.Join(s.cfg.StateDir, "logs", name+".log")
	pidPath := filepath.Join(s.cfg.StateDir, "pids", name+".pid")
	for _, d := range []string{filepath.Dir(logPath), filepath.Dir(pidPath)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "# %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = s.cfg.StateDir
	// Own process group, so stopping kills everything it spawned; and if the sandbox itself is
	// killed hard, the kernel still terminates the child.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, pidPath: pidPath, done: make(chan struct{})}
	if err := writePidFile(pidPath, cmd.Process.Pid, bin); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return nil, err
	}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	s.procs = append(s.procs, p)
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs the group.
func (p *process) stop(grace time.Duration) {
	pgid := p.cmd.Process.Pid
	if !p.exited() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			// Still not reaped, so the group id cannot have been reused: kill the whole group.
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
	}
	_ = os.Remove(p.pidPath)
}

// writePidFile records "<pid> <binary>" so `sandbox down` can check the pid still belongs to
// the binary it started before signalling it.
func writePidFile(path string, pid int, bin string) error {
	return os.WriteFile(path, []byte(fmt.Sprintf("%d %s\n", pid, bin)), 0o644)
}

// livePid reads a pid file and returns the pid if that process is alive and still runs the
// recorded binary (0 otherwise).
func livePid(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 1 {
		return 0
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return 0
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	want, err := filepath.EvalSymlinks(fields[1])
	if err != nil {
		want = fields[1]
	}
	if exe != want && exe != fields[1] {
		return 0
	}
	return pid
}

// checkPort fails with one clear line when addr cannot be bound.
func checkPort(addr, what string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("port %s (%s) is already in use: stop what holds it (`make sandbox-down` if it is an old sandbox) or choose another --port-base", addr, what)
	}
	return l.Close()
}

// Tail returns the last n lines of a file.
func Tail(path string, n int) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// Down stops a sandbox started from stateDir by another process: it asks the supervisor to stop
// (which stops its children) and then stops any child whose pid file is still live. It returns
// the names of the processes it signalled.
func Down(stateDir string) ([]string, error) {
	pidDir := filepath.Join(stateDir, "pids")
	var stopped []string
	if pid := livePid(filepath.Join(pidDir, supervisorName+".pid")); pid != 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		stopped = append(stopped, fmt.Sprintf("%s (pid %d)", supervisorName, pid))
		waitExited(pid, 60*time.Second, 200*time.Millisecond)
	}
	entries, err := os.ReadDir(pidDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return stopped, nil
		}
		return stopped, err
	}
	for _, e := range entries {
		path := filepath.Join(pidDir, e.Name())
		if pid := livePid(path); pid != 0 {
			name := strings.TrimSuffix(e.Name(), ".pid")
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			_ = syscall.Kill(pid, syscall.SIGTERM)
			waitExited(pid, 10*time.Second, 100*time.Millisecond)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			stopped = append(stopped, fmt.Sprintf("%s (pid %d)", name, pid))
		}
		_ = os.Remove(path)
	}
	return stopped, nil
}

// waitExited waits up to timeout for the process pid to be gone, looking every interval.
func waitExited(pid int, timeout, interval time.Duration) {
	_ = wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		return syscall.Kill(pid, 0) != nil, nil
	})
}

// writeLauncher writes c's command line as a shell script that runs it in the foreground, logging
// to its stdout, for a supervisor other than the sandbox (Tilt's serve_cmd).
func writeLauncher(c *Component, dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# %s as the sandbox runs it; written by `sandbox up --external-manager`.\ncd %s\n", c.Name, shellQuote(dir))
	for _, e := range c.env {
		fmt.Fprintf(&b, "export %s\n", shellQuote(e))
	}
	b.WriteString("exec " + shellQuote(c.binary))
	for _, a := range c.args {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" \"$@\"\n")
	if err := os.MkdirAll(filepath.Dir(c.Launcher), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.Launcher, []byte(b.String()), 0o755)
}

// shellQuote quotes s for sh: single quotes, each single quote inside closed, escaped, reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
