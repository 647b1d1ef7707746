package bootemu

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Script is a command that runs, before kubeadm, a script the payload itself writes.
type Script struct {
	// Path is where the payload writes the script (cloud-init runs runcmd from /, so
	// "./wait-signal.sh" is /wait-signal.sh).
	Path string
	// Command is the runcmd line, arguments and shell quoting included. It may carry
	// credentials: it is never logged.
	Command string
	// Content is the script.
	Content string
}

// preKubeadmScripts are the commands before the kubeadm command that start with a script the
// payload writes (a file with a shebang).
func preKubeadmScripts(files map[string]string, commands []string) []Script {
	var out []Script
	for _, c := range commands {
		c = strings.TrimSpace(c)
		if kubeadmCommand.MatchString(c) {
			break
		}
		first, _, _ := strings.Cut(c, " ")
		path := first
		if rel, ok := strings.CutPrefix(first, "./"); ok {
			path = "/" + rel
		}
		if content, ok := files[path]; ok && strings.HasPrefix(content, "#!") {
			out = append(out, Script{Path: path, Command: c, Content: content})
		}
	}
	return out
}

// shellWords are what starts a shell line without being a program.
var shellWords = map[string]bool{"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true,
	"do": true, "done": true, "while": true, "until": true, "case": true, "esac": true, "{": true, "}": true,
	"[": true, "[[": true, "!": true, "set": true, "export": true, "local": true}

// programName is a command's first word when it names a program (no assignment, no quoting).
var programName = regexp.MustCompile(`^[A-Za-z0-9_./+-]+$`)

// programsOf lists, once each and in order, the programs the runcmd lines start other than
// kubeadm: the first word of each shell line, here-document bodies skipped.
func programsOf(commands []string) []string {
	var out []string
	for _, c := range commands {
		lines := logicalLines(c)
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			if m := heredoc.FindStringSubmatch(line); m != nil {
				_, end := heredocBody(lines[i+1:], m[2])
				i += end
			}
			fields := strings.Fields(line)
			if len(fields) == 0 || strings.HasPrefix(fields[0], "#") || shellWords[fields[0]] ||
				!programName.MatchString(fields[0]) || fields[0] == "kubeadm" || slices.Contains(out, fields[0]) {
				continue
			}
			out = append(out, fields[0])
		}
	}
	return out
}

// scriptRun is one script running on an emulated host: a bash process in a folder of its own
// that stands in for the host's root filesystem.
type scriptRun struct {
	cmd  *exec.Cmd
	dir  string
	done chan error
}

// scriptsFinished runs the host's allowed pre-kubeadm scripts one after the other, as cloud-init's
// runcmd does, and reports whether all of them have ended. A script that fails is reported on the
// console and the boot goes on, as runcmd goes on after a failed line.
func (e *Emulator) scriptsFinished(h *host) bool {
	for h.nextScript < len(h.boot.Scripts) {
		s := h.boot.Scripts[h.nextScript]
		if h.script == nil {
			run, err := e.startScript(h, s)
			if err != nil {
				e.console(h, "cloud-init: runcmd: %s: %v", s.Path, err)
				h.nextScript++
				continue
			}
			h.script = run
		}
		select {
		case err := <-h.script.done:
			_ = os.RemoveAll(h.script.dir)
			h.script = nil
			h.nextScript++
			if err != nil {
				e.console(h, "cloud-init: runcmd: %s: %v", s.Path, err)
				continue
			}
			e.console(h, "cloud-init: runcmd: %s finished", s.Path)
		default:
			return false
		}
	}
	return true
}

// startScript writes the script under a fresh folder and runs the command there with bash. The
// process group is killed with the host (stopScript) or with the emulation's process.
func (e *Emulator) startScript(h *host, s Script) (*scriptRun, error) {
	dir, err := os.MkdirTemp("", "bootemu-"+h.deviceID+"-")
	if err != nil {
		return nil, err
	}
	rel := strings.TrimPrefix(s.Path, "/")
	file := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, []byte(s.Content), 0o700); err != nil { //nolint:gosec // the script must be executable
		return nil, err
	}
	_, args, _ := strings.Cut(s.Command, " ")
	cmd := exec.Command("bash", "-c", "./"+rel+" "+args) //nolint:gosec // running the payload's script is the point
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	e.console(h, "cloud-init: runcmd: running %s", s.Path)
	run := &scriptRun{cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() {
		// The script's output goes to the serial console, a repeated line once.
		scanner, last := bufio.NewScanner(out), ""
		for scanner.Scan() {
			if line := scanner.Text(); line != last {
				e.sim.AppendConsole(h.deviceID, s.Path+": "+line)
				last = line
			}
		}
		run.done <- cmd.Wait()
	}()
	return run, nil
}

// stopScript kills the host's running script, if any, with every process it started.
func (h *host) stopScript() {
	if h.script == nil {
		return
	}
	_ = syscall.Kill(-h.script.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case err := <-h.script.done:
		_ = err // killed: its exit status says nothing more
	case <-time.After(5 * time.Second):
	}
	_ = os.RemoveAll(h.script.dir)
	h.script = nil
}

// allowedScripts keeps the scripts the emulation was asked to run (Options.RunScripts).
func allowedScripts(scripts []Script, allowed []string) []Script {
	return slices.DeleteFunc(scripts, func(s Script) bool { return !slices.Contains(allowed, s.Path) })
}

// String never shows the command: it may carry credentials.
func (s Script) String() string { return fmt.Sprintf("script %s", s.Path) }
