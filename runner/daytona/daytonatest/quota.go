package daytonatest

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Quota is an amount of sandbox resources: an organization's totals, the
// most one sandbox may ask, or what is in use. Memory and disk are in GiB,
// as the API counts them (the create request's are whole GB).
type Quota struct {
	CPU, MemoryGiB, DiskGiB int
	// Sandboxes is the emulator's own quota, not the real API's: a plain
	// concurrency cap for tests.
	Sandboxes int
}

// The documented per-sandbox maximum of an organization (sandboxes.mdx),
// and the API's defaults for an image's sandbox that names no resources
// (sandbox.service.ts), which the emulator gives the default snapshot too.
const (
	defaultMaxCPU, defaultMaxMemory, defaultMaxDisk = 4, 8, 10
	defaultCPU, defaultMemory, defaultDisk          = 1, 1, 3
)

// The real API's messages (v0.170.0 sandbox.service.ts
// validateOrganizationQuotas, advice from error-messages.ts).
const (
	upgradeTierMessage     = "To increase concurrency limits, upgrade your organization's Tier by visiting https://app.daytona.io/dashboard/limits."
	archiveSandboxesAdvice = "Consider archiving your unused Sandboxes to free up available storage."
	perSandboxLimitAdvice  = "Need higher resource limits per-sandbox? Contact us at support@daytona.io and let us know about your use case."
)

// perSandboxRefusal is the real API's 400 message for a create asking more
// than one sandbox may have (CPU, then memory, then disk), or "".
func (s *Server) perSandboxRefusal(cpu, mem, disk int) string {
	m := s.opts.MaxPerSandbox
	maxCPU, maxMem := positiveOr(m.CPU, defaultMaxCPU), positiveOr(m.MemoryGiB, defaultMaxMemory)
	maxDisk := positiveOr(m.DiskGiB, defaultMaxDisk)
	switch {
	case cpu > maxCPU:
		return fmt.Sprintf("CPU request %d exceeds maximum allowed per sandbox (%d).\n%s", cpu, maxCPU, perSandboxLimitAdvice)
	case mem > maxMem:
		return fmt.Sprintf("Memory request %dGB exceeds maximum allowed per sandbox (%dGB).\n%s", mem, maxMem, perSandboxLimitAdvice)
	case disk > maxDisk:
		return fmt.Sprintf("Disk request %dGB exceeds maximum allowed per sandbox (%dGB).\n%s", disk, maxDisk, perSandboxLimitAdvice)
	}
	return ""
}

// quotaRefusal is the real API's message for a create that would take the
// organization over a total (CPU, then memory, then disk), or "". The
// caller holds s.mu.
func (s *Server) quotaRefusal(now time.Time, cpu, mem, disk int) string {
	q := s.opts.Quota
	u := s.usage(now)
	switch {
	case q.CPU > 0 && u.CPU+cpu > q.CPU:
		return fmt.Sprintf("Total CPU limit exceeded. Maximum allowed: %d.\n%s", q.CPU, upgradeTierMessage)
	case q.MemoryGiB > 0 && u.MemoryGiB+mem > q.MemoryGiB:
		return fmt.Sprintf("Total memory limit exceeded. Maximum allowed: %dGiB.\n%s", q.MemoryGiB, upgradeTierMessage)
	case q.DiskGiB > 0 && u.DiskGiB+disk > q.DiskGiB:
		return fmt.Sprintf("Total disk limit exceeded. Maximum allowed: %dGiB.\n%s\n%s", q.DiskGiB, archiveSandboxesAdvice, upgradeTierMessage)
	case q.Sandboxes > 0 && u.Sandboxes+1 > q.Sandboxes: // the emulator's own, worded like the real ones
		return fmt.Sprintf("Total sandbox limit exceeded. Maximum allowed: %d.\n%s", q.Sandboxes, upgradeTierMessage)
	}
	return ""
}

// holds says what a sandbox counts against the quota now, as the real API
// counts it (organization-usage.service.ts): running states count CPU,
// memory and disk, stopped disk only, error, build_failed and destroyed
// nothing; a deleted sandbox counts in full until it is destroyed.
func (sb *sandbox) holds(now time.Time) (compute, disk bool) {
	switch sb.state(now) {
	case "destroyed", "error", "build_failed":
		return false, false
	case "stopped", "archiving":
		return false, true
	}
	return true, true
}

// usage is what the organization's sandboxes hold now. The caller holds
// s.mu.
func (s *Server) usage(now time.Time) Quota {
	var u Quota
	for _, sb := range s.order {
		compute, disk := sb.holds(now)
		if compute {
			u.CPU += sb.cpu
			u.MemoryGiB += sb.mem
		}
		if disk {
			u.DiskGiB += sb.disk
		}
		if compute || disk {
			u.Sandboxes++
		}
	}
	return u
}

// notePeakUsage records the usage after a create, the only time it grows.
// The caller holds s.mu.
func (s *Server) notePeakUsage(now time.Time) {
	u := s.usage(now)
	s.peakUsage.CPU = max(s.peakUsage.CPU, u.CPU)
	s.peakUsage.MemoryGiB = max(s.peakUsage.MemoryGiB, u.MemoryGiB)
	s.peakUsage.DiskGiB = max(s.peakUsage.DiskGiB, u.DiskGiB)
	s.peakUsage.Sandboxes = max(s.peakUsage.Sandboxes, u.Sandboxes)
}

// Usage is what the organization's sandboxes count against its quota now:
// unlike LiveCount, a sandbox being destroyed counts, a failed one not.
func (s *Server) Usage() Quota {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage(time.Now())
}

// PeakUsage is the largest usage seen of each resource, each on its own.
func (s *Server) PeakUsage() Quota {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakUsage
}

// knownSnapshot says whether the organization has the snapshot a create
// names: the default (no name), Options.Snapshots, FailStart's keys.
func (s *Server) knownSnapshot(name string) bool {
	_, fails := s.opts.FailStart[name]
	return strings.TrimSpace(name) == "" || slices.Contains(s.opts.Snapshots, name) || fails
}

// failReasons are the real API's errorReasons for these states
// (sandbox-start.action.ts).
var failReasons = map[string]string{
	"error":        "Timeout while creating sandbox",
	"build_failed": "Timeout while building snapshot on runner",
}
