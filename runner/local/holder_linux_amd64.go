package local

// holderCode is the PID namespace's init for amd64 Linux, position
// independent, assembled from (Intel syntax):
//
//	_start: lea  rsi, [rip+act]   ; rt_sigaction(SIGCHLD, &act, NULL, 8):
//	        mov  edi, 17          ;   SIGCHLD ignored, so the kernel reaps
//	        xor  edx, edx         ;   every orphan the init inherits at once
//	        mov  r10d, 8
//	        mov  eax, 13
//	        syscall
//	        mov  edi, 15          ; prctl(PR_SET_NAME, "forge-init")
//	        lea  rsi, [rip+name]
//	        mov  eax, 157
//	        syscall
//	loop:   xor  edi, edi         ; read(0, rsp, 1)
//	        mov  rsi, rsp
//	        mov  edx, 1
//	        xor  eax, eax
//	        syscall
//	        test rax, rax
//	        jg   loop             ; a byte: read on
//	        cmp  rax, -4
//	        je   loop             ; EINTR: read on
//	        xor  edi, edi         ; EOF or an error: exit(0)
//	        mov  eax, 60
//	        syscall
//	act:    .quad 1, 0, 0, 0      ; SIG_IGN, no flags, no restorer, empty mask
//	name:   .asciz "forge-init"
var holderCode = []byte{
	0x48, 0x8d, 0x35, 0x49, 0x00, 0x00, 0x00, // lea rsi, [rip+0x49]
	0xbf, 0x11, 0x00, 0x00, 0x00, // mov edi, 17
	0x31, 0xd2, // xor edx, edx
	0x41, 0xba, 0x08, 0x00, 0x00, 0x00, // mov r10d, 8
	0xb8, 0x0d, 0x00, 0x00, 0x00, // mov eax, 13
	0x0f, 0x05, // syscall
	0xbf, 0x0f, 0x00, 0x00, 0x00, // mov edi, 15
	0x48, 0x8d, 0x35, 0x49, 0x00, 0x00, 0x00, // lea rsi, [rip+0x49]
	0xb8, 0x9d, 0x00, 0x00, 0x00, // mov eax, 157
	0x0f, 0x05, // syscall
	0x31, 0xff, // loop: xor edi, edi
	0x48, 0x89, 0xe6, // mov rsi, rsp
	0xba, 0x01, 0x00, 0x00, 0x00, // mov edx, 1
	0x31, 0xc0, // xor eax, eax
	0x0f, 0x05, // syscall
	0x48, 0x85, 0xc0, // test rax, rax
	0x7f, 0xed, // jg loop
	0x48, 0x83, 0xf8, 0xfc, // cmp rax, -4
	0x74, 0xe7, // je loop
	0x31, 0xff, // xor edi, edi
	0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60
	0x0f, 0x05, // syscall
	1, 0, 0, 0, 0, 0, 0, 0, // act: sa_handler = SIG_IGN
	0, 0, 0, 0, 0, 0, 0, 0, // sa_flags
	0, 0, 0, 0, 0, 0, 0, 0, // sa_restorer
	0, 0, 0, 0, 0, 0, 0, 0, // sa_mask
	'f', 'o', 'r', 'g', 'e', '-', 'i', 'n', 'i', 't', 0, // name at 0x70
}

const holderMachine = 62 // EM_X86_64
