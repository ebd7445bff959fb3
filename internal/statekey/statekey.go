// Package statekey loads the key that signs the requestState of 2026-07-28 input_required
// results (mcp.ServerOptions.StateKey), for every Relay program that serves MCP: relay
// bridge, relay gateway, and the examples' -http mode. Instances of a fleet that hold the
// same key verify each other's requestState, so that a client's retry may land on any of
// them; without a key each process draws a random one, and a retry must reach the process
// that asked.
//
// The key comes from one of two places, never both:
//
//   - the file named by --state-key-file PATH, whose bytes are the key;
//   - the environment variable RELAY_STATE_KEY, whose bytes are the key (an empty variable
//     counts as unset).
//
// Giving both is refused, so that no instance of a fleet silently signs with another key
// than the one its operator meant. One line end at the very end ("\n" or "\r\n") is not part
// of the key, in the file and in the variable alike: a key written by
// `openssl rand -hex 32 > key` or `echo`, read by `$(cat key)`, or put in a Kubernetes
// Secret from a file, is the same key everywhere. The key must be at least 32 bytes (after
// that line end is dropped); a shorter one is refused with an error that says how to make
// one. A key of text (hex or base64 of random bytes) is the one to make: it can be put in
// the variable, and handed to children (Export).
package statekey

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
)

// Env is the environment variable whose bytes are the key.
const Env = "RELAY_STATE_KEY"

// FlagName is the flag that names the file holding the key.
const FlagName = "state-key-file"

// MinLen is the shortest key accepted, in bytes.
const MinLen = 32

// HowToMake says how to make a key, for errors and help.
const HowToMake = `make one with "head -c 32 /dev/urandom | base64 > key" or "openssl rand -hex 32 > key"`

// Usage is the flag's help text: what the key is for, the variable, and the rules above.
const Usage = "the `PATH` of a file holding the key (at least 32 bytes; " + HowToMake + ") that signs the requestState of " +
	"input_required results, so that a client's retry may reach any instance holding the same key " +
	"(default: a random key per process); or set $" + Env + " to the key itself, not both. " +
	"A line end at the end of the file or the variable is not part of the key"

// Flag is the --state-key-file flag of a flag set.
type Flag struct{ path *string }

// AddFlag declares --state-key-file on fs, with Usage followed by more (which may be empty):
// what the key also does in that program.
func AddFlag(fs *flag.FlagSet, more string) *Flag {
	usage := Usage
	if more != "" {
		usage += "; " + more
	}
	return &Flag{path: fs.String(FlagName, "", usage)}
}

// Key returns the key from the flag's file or from $RELAY_STATE_KEY (see Load): nil, and
// no error, when neither is given.
func (f *Flag) Key() ([]byte, error) {
	return Load(*f.path, os.Getenv(Env))
}

// Load returns the key held by the file at path or, when path is empty, the value of
// $RELAY_STATE_KEY given as env: nil, and no error, when both are empty. It is an error to
// give both, a file that cannot be read, and a key shorter than MinLen; each error says
// what to do.
func Load(path, env string) ([]byte, error) {
	var key []byte
	var from string
	switch {
	case path != "" && env != "":
		return nil, fmt.Errorf("the state key is given twice, by --%s and by $%s: give it one way (unset %s, or drop --%s)",
			FlagName, Env, Env, FlagName)
	case path != "":
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--%s %s: the file does not exist; %s, and give its path", FlagName, path, HowToMake)
		}
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", FlagName, err)
		}
		key, from = b, "the file "+path+" (--"+FlagName+")"
	case env != "":
		key, from = []byte(env), "$"+Env
	default:
		return nil, nil
	}
	key = trimLineEnd(key)
	if len(key) < MinLen {
		return nil, fmt.Errorf("the state key from %s is %d bytes, and must be at least %d random bytes: %s",
			from, len(key), MinLen, HowToMake)
	}
	return key, nil
}

// trimLineEnd drops one "\n" or "\r\n" at the end of key.
func trimLineEnd(key []byte) []byte {
	if k, ok := bytes.CutSuffix(key, []byte("\n")); ok {
		key, _ = bytes.CutSuffix(k, []byte("\r"))
	}
	return key
}

// Export sets $RELAY_STATE_KEY to key in this process's environment, which the children it
// starts inherit: a program that passes its children's requestState on (relay bridge, relay
// gateway) needs them to sign with the fleet's key too, and a child that is a Relay server
// reads it there. A nil key exports nothing. A key holding a NUL byte cannot be put in an
// environment variable: the error says to make a key of text.
func Export(key []byte) error {
	if key == nil {
		return nil
	}
	if bytes.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("the state key holds a NUL byte, so it cannot be handed to the children in $%s; "+
			"use a key of text: %s", Env, HowToMake)
	}
	return os.Setenv(Env, string(key))
}

// Derive returns a key for purpose drawn from the fleet's key (HMAC-SHA256 of purpose), so
// that one key serves several ends and none of them can stand for another; nil for nil.
func Derive(key []byte, purpose string) []byte {
	if key == nil {
		return nil
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
