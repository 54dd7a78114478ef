#include "textflag.h"

// func cloneInit(flags uintptr, rfd int32, page uintptr) (pid int, errno uintptr)
//
// The PID namespace's built-in init: a process that shares this process's memory
// (CLONE_VM), so that starting it copies no address space and loads no
// program. Every signal is blocked on the calling thread across clone, so
// the child never runs one of this process's handlers; the child then, touching
// only page (see initPage) and never the stack or this process's memory:
//   - moves rfd to 0 and closes every other descriptor (close_range, Linux
//     5.9), so that it holds nothing of this process's but its own pipe;
//   - sets every signal's action to the default and SIGCHLD's to ignore
//     (the kernel then reaps every orphan it inherits at once; as a PID
//     namespace's init it gets no other signal but SIGKILL and SIGSTOP
//     from outside);
//   - puts itself in a process group of its own, names itself forge-init;
//   - unblocks the signals and reads fd 0 until EOF or an error other
//     than EINTR, then exits 0. When a step fails it exits 127.
TEXT ·cloneInit(SB),NOSPLIT,$16-40
	// Block every signal on this thread, keeping its mask in old.
	MOVQ	$-1, all-16(SP)
	MOVQ	$2, DI // SIG_SETMASK
	LEAQ	all-16(SP), SI
	LEAQ	old-8(SP), DX
	MOVQ	$8, R10
	MOVQ	$14, AX // rt_sigprocmask
	SYSCALL

	MOVQ	flags+0(FP), DI
	MOVLQSX	rfd+8(FP), R12 // kept across clone for the child
	MOVQ	page+16(FP), R13
	LEAQ	4096(R13), SI // the child's stack: it pushes nothing
	XORQ	DX, DX
	XORQ	R10, R10
	XORQ	R8, R8
	MOVQ	$56, AX // clone
	SYSCALL
	CMPQ	AX, $0
	JEQ	child

	// The parent: restore the thread's mask, return pid or errno.
	MOVQ	AX, BX
	MOVQ	$2, DI
	LEAQ	old-8(SP), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$14, AX
	SYSCALL
	CMPQ	BX, $0xfffffffffffff001
	JLS	ok
	NEGQ	BX
	MOVQ	$-1, pid+24(FP)
	MOVQ	BX, errno+32(FP)
	RET
ok:
	MOVQ	BX, pid+24(FP)
	MOVQ	$0, errno+32(FP)
	RET

child:
	MOVQ	R12, DI
	XORQ	SI, SI
	MOVQ	$33, AX // dup2(rfd, 0)
	SYSCALL
	TESTQ	AX, AX
	JNE	fail
	MOVQ	$1, DI
	MOVL	$0xffffffff, SI
	XORQ	DX, DX
	MOVQ	$436, AX // close_range(1, ~0U, 0)
	SYSCALL
	TESTQ	AX, AX
	JNE	fail

	MOVQ	$1, R9
dfl:
	MOVQ	R9, DI
	LEAQ	0(R13), SI // the default action
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$13, AX // rt_sigaction; SIGKILL's and SIGSTOP's fail, as they may
	SYSCALL
	INCQ	R9
	CMPQ	R9, $64
	JLE	dfl
	MOVQ	$17, DI // SIGCHLD
	LEAQ	32(R13), SI // ignored
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$13, AX
	SYSCALL
	TESTQ	AX, AX
	JNE	fail

	XORQ	DI, DI
	XORQ	SI, SI
	MOVQ	$109, AX // setpgid(0, 0)
	SYSCALL
	MOVQ	$15, DI // PR_SET_NAME
	LEAQ	72(R13), SI
	MOVQ	$157, AX // prctl
	SYSCALL

	MOVQ	$2, DI // SIG_SETMASK
	LEAQ	64(R13), SI // the empty set
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$14, AX
	SYSCALL

loop:
	XORQ	DI, DI
	LEAQ	128(R13), SI
	MOVQ	$1, DX
	XORQ	AX, AX // read(0, page+128, 1)
	SYSCALL
	CMPQ	AX, $0
	JGT	loop // a byte: read on
	CMPQ	AX, $-4
	JEQ	loop // EINTR: read on
	XORQ	DI, DI
	MOVQ	$60, AX // exit(0)
	SYSCALL
fail:
	MOVQ	$127, DI
	MOVQ	$60, AX
	SYSCALL
