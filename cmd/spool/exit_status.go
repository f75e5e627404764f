package main

import (
	"errors"
	"os"
)

// Exit statuses of spool. Anything else that fails exits 1 (2 is Go's own
// for a panic). A supervisor keys on these: a node the cluster refused
// would be refused again on every restart, so systemd is told not to
// restart it (the NixOS module's RestartPreventExitStatus), while a crash
// or a failed start is retried.
const (
	// exitRefused: the cluster refused this node, because a live member
	// already has its broker id (--node-id) or node name (--node-name).
	// 78 is EX_CONFIG of sysexits(3): the operator must change the
	// configuration before a restart can help.
	exitRefused = 78
)

// exitError is an error that ends the process with a given status.
type exitError struct {
	status int
	err    error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExitStatus makes err end the process with status; nil stays nil.
func withExitStatus(status int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{status: status, err: err}
}

// exitStatus is the process status for the error a command returned.
func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.status
	}
	return 1
}

// exit ends the process with err's status.
func exit(err error) { os.Exit(exitStatus(err)) }
