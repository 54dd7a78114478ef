package local

// The built-in init of a job's PID namespace: holderCode (machine code, per
// architecture; 243 bytes of executable on amd64) in a static ELF image,
// kept in a sealed memfd for the life of the process, so that nothing is
// written to disk and nothing can be left behind.

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// holderImage is holderCode as a static ELF executable: one segment mapping
// the whole file read and execute, entered just after the headers.
func holderImage() []byte {
	const base, headers = 0x400000, 64 + 56
	size := uint64(headers + len(holderCode))
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, elf.Header64{
		Ident: [elf.EI_NIDENT]byte{
			0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT),
		},
		Type: uint16(elf.ET_EXEC), Machine: holderMachine, Version: uint32(elf.EV_CURRENT),
		Entry: base + headers, Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: 1,
	})
	_ = binary.Write(&b, binary.LittleEndian, elf.Prog64{
		Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X),
		Vaddr: base, Paddr: base, Filesz: size, Memsz: size, Align: 0x1000,
	})
	b.Write(holderCode)
	return b.Bytes()
}

// builtinHolder returns the path of the built-in init, made once per
// process: a memfd holding holderImage, sealed, reopened read-only (a file
// open for writing cannot be executed) at a descriptor of 10 or more, out
// of the way of the ones os/exec moves about in a child before exec'ing
// (the path is resolved in the child).
var builtinHolder = sync.OnceValues(func() (string, error) {
	if holderCode == nil {
		return "", errors.ErrUnsupported
	}
	// MFD_EXEC: where vm.memfd_noexec makes memfds not executable by
	// default; kernels before 6.3 do not know it.
	fd, err := unix.MemfdCreate("forge-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate("forge-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return "", fmt.Errorf("memfd for the PID namespace's init: %w", err)
	}
	rw := os.NewFile(uintptr(fd), "forge-init")
	defer rw.Close()
	if _, err := rw.Write(holderImage()); err != nil {
		return "", fmt.Errorf("write the PID namespace's init: %w", err)
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		return "", fmt.Errorf("seal the PID namespace's init: %w", err)
	}
	ro, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("reopen the PID namespace's init: %w", err)
	}
	high, err := unix.FcntlInt(uintptr(ro), unix.F_DUPFD_CLOEXEC, 10)
	unix.Close(ro)
	if err != nil {
		return "", fmt.Errorf("place the PID namespace's init: %w", err)
	}
	return "/proc/self/fd/" + strconv.Itoa(high), nil
})
