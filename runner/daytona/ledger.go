package daytona

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// LedgerFile is the ledger's name inside a run's directory.
const LedgerFile = "sandboxes.jsonl"

// Ledger events.
const (
	eventOpen        = "open"        // a Runner started using the ledger
	eventCreate      = "create"      // about to create Name
	eventCreated     = "created"     // Name exists as ID
	eventDeleted     = "deleted"     // Name (ID) is gone
	eventNotCreated  = "not-created" // no attempt to create Name can have succeeded
	eventUndeletable = "undeletable" // Name (ID) could not be deleted
	eventClose       = "close"       // the Runner closed
)

// LedgerEntry is one line of sandboxes.jsonl.
type LedgerEntry struct {
	Time  time.Time `json:"time"`
	Event string    `json:"event"`
	RunID string    `json:"run_id,omitempty"`
	Name  string    `json:"name,omitempty"`
	ID    string    `json:"id,omitempty"`
	PID   int       `json:"pid,omitempty"`
	Host  string    `json:"host,omitempty"`
	Error string    `json:"error,omitempty"`
}

// ledger appends entries, a synced line each: after a crash it names every
// sandbox that may exist.
type ledger struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

func openLedger(path string) (*ledger, error) {
	if path == "" {
		return &ledger{}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("make ledger directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	return &ledger{f: f, path: path}, nil
}

func (l *ledger) append(e LedgerEntry) error {
	if l.f == nil {
		return nil
	}
	e.Time = time.Now().UTC()
	b, _ := json.Marshal(e) // plain fields: it cannot fail
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("append to ledger %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync ledger %s: %w", l.path, err)
	}
	return nil
}

func (l *ledger) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// ReadLedger reads a ledger; a torn last line (a crash mid-write) is
// skipped.
func ReadLedger(path string) ([]LedgerEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []LedgerEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e LedgerEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// LedgerState summarises a ledger.
type LedgerState struct {
	Open bool // a Runner opened it and has not closed it since
	PID  int
	Host string
}

// Summarise folds a ledger's entries.
func Summarise(entries []LedgerEntry) LedgerState {
	var st LedgerState
	for _, e := range entries {
		switch e.Event {
		case eventOpen:
			st.Open, st.PID, st.Host = true, e.PID, e.Host
		case eventClose:
			st.Open = false
		}
	}
	return st
}
