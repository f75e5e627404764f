package bench

// The baseline's server process: started by Baseline with the server's
// flags, it prints the address it listens on as one line on stdout and
// serves until its stdin closes (the baseline is done, or died).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SpoolServerCommand is the default BaselineConfig.ServerCommand: this
// binary's hidden `bench baseline-server`, which is spool's.
func SpoolServerCommand(args ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary to run the baseline server: %w", err)
	}
	return exec.Command(self, append([]string{"bench", "baseline-server"}, args...)...), nil
}

// baselineServerReady bounds how long a server may take to listen; the copy
// server first writes and reads its whole file.
const baselineServerReady = 5 * time.Minute

// baselineProcess is a running baseline server process.
type baselineProcess struct {
	mode   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *cappedBuffer
	addr   string
	waited func() error // cmd.Wait's answer, once the process has exited
}

// startServer starts a server process serving mode and waits for the
// address it listens on.
func (l *BaselineConfig) startServer(mode string, args ...string) (*baselineProcess, error) {
	command := l.ServerCommand
	if command == nil {
		command = SpoolServerCommand
	}
	cmd, err := command(append([]string{"--mode", mode}, args...)...)
	if err != nil {
		return nil, err
	}
	p := &baselineProcess{mode: mode, cmd: cmd, stderr: &cappedBuffer{max: 64 << 10}}
	addr := &firstLine{line: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = addr, p.stderr
	// Its own process group: a ^C reaches only the baseline, which then
	// stops its server by closing its stdin (as its exit would).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s server %s: %w", mode, cmd.Path, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	select {
	case p.addr = <-addr.line:
		p.waited = func() error { <-exited; return waitErr }
		return p, nil
	case <-exited:
		return nil, fmt.Errorf("%s server exited before listening: %v: %s", mode, waitErr, p.stderr.text())
	case <-time.After(baselineServerReady):
		cmd.Process.Kill()
		<-exited
		return nil, fmt.Errorf("%s server printed no address in %v: %s", mode, baselineServerReady, p.stderr.text())
	}
}

// stop ends the server (closing its stdin, then killing it if it lingers)
// and returns what it reported.
func (p *baselineProcess) stop() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.waited() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
		err = errors.New("did not exit within 30s of its stdin closing; killed")
	}
	if err != nil {
		return fmt.Errorf("%s server (pid %d): %w: %s", p.mode, p.cmd.Process.Pid, err, p.stderr.text())
	}
	return nil
}

// cpu is the CPU time (user and system) the server process has used so far.
func (p *baselineProcess) cpu() (time.Duration, error) {
	return ProcessCPUTime(p.cmd.Process.Pid)
}

// ProcessCPUTime reads a process's CPU time (user and system, all its
// threads) from /proc/PID/stat, in clock ticks of 10 ms.
func ProcessCPUTime(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time of pid %d: %w", pid, err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is the first, utime and stime the 12th and 13th.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	fields := strings.Fields(string(rest))
	if len(fields) < 13 {
		return 0, fmt.Errorf("cpu time of pid %d: short /proc/%d/stat %q", pid, pid, stat)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time of pid %d: /proc/%d/stat %q", pid, pid, stat)
	}
	const clockTicks = 100 // USER_HZ, 100 on every Linux architecture Go supports
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// firstLine is a process's stdout: its first line is sent on line, the
// rest dropped.
type firstLine struct {
	buf  []byte
	sent bool
	line chan string
}

func (w *firstLine) Write(b []byte) (int, error) {
	if w.sent {
		return len(b), nil
	}
	w.buf = append(w.buf, b...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.line <- strings.TrimSpace(string(w.buf[:i]))
		w.sent, w.buf = true, nil
	} else if len(w.buf) > 4096 {
		// Not an address: dialing it fails, naming what was printed.
		w.line <- string(w.buf[:64])
		w.sent, w.buf = true, nil
	}
	return len(b), nil
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (c *cappedBuffer) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

func (c *cappedBuffer) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := strings.TrimSpace(c.buf.String())
	if s == "" {
		return "(no stderr)"
	}
	return s
}
