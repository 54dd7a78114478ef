// Package agent knows the real coding agents forge can install and run by
// name (claude-code, codex): each as data (Spec: its npm package, the shell
// lines that install it once per image, the script that runs it unattended
// on a task's instruction, its fixed environment), and the readers of their
// own JSON logs (ReadLog), which give forge's transcript steps, token usage,
// cost, turns and the agent's own words when it failed.
//
// It must not know about manifests, plans or backends: forge decides where
// a Spec's lines run and what becomes of a Log. agenttest stands for the
// model vendors in its tests: the real CLIs run against a fake model server.
package agent
