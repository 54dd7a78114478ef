// Package agenttest stands for the model vendors in the tests of forge's
// real agents: a fake model server that speaks, as strictly as the agents
// need, the Anthropic Messages API (claude-code) and the OpenAI Responses
// API (codex), streaming and not, with the vendors' key checks and error
// shapes, answering each conversation from a Script and logging every
// request (Server.Requests); and the real agent CLIs, installed from npm
// once per machine into a shared cache (CLI, Install).
//
// Its answers are deterministic: token counts are four per three words, and
// a call after a tool result reads all but the newest message from the
// cache, so that a test can assert usage and cost exactly.
//
// It must not import forge's other packages: like daytonatest for Daytona,
// it is the outside world. Command fakemodel serves it until Ctrl-C;
// command install fills the cache before a CI run.
package agenttest
