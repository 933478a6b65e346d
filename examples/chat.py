"""A terminal chat that remembers each user across runs, with Hippocampus and `with_memory`.

    make dev                                          # shell 1: the local stack on :3000
    .venv/bin/python -m pip install -e './client[openai]'   # shell 2, once
    .venv/bin/python examples/chat.py --user alice

With OPENAI_API_KEY set, the chat model is the OpenAI API (model: OPENAI_MODEL, default
gpt-4o-mini; OPENAI_BASE_URL for any OpenAI-compatible endpoint). Without it, a tiny local
stand-in model starts in this process on 127.0.0.1 and answers with the memory it was given,
so what Hippocampus remembered is visible with no key and no network. See examples/README.md.
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openai import APIError, OpenAI

from hippocampus_client import MEMORY_PREFIX, MemoryClient, MemoryOpenAI, with_memory

SYSTEM_PROMPT = "You are a friendly assistant. Use what you remember about the user when it helps."


# --- the local stand-in model: OpenAI's chat completions route, JSON or streamed ---------------


def local_answer(messages: list[dict[str, Any]]) -> str:
    """What the stand-in says: the first section of the memory it was given (the summary, or the
    facts when there is no summary yet), from the system message that starts with MEMORY_PREFIX."""
    memory = next(
        (
            m["content"]
            for m in messages
            if m.get("role") == "system" and m["content"].startswith(MEMORY_PREFIX)
        ),
        None,
    )
    if memory is None:
        return "(local model) I was given no memory about you yet. Tell me something about yourself!"
    block = memory.removeprefix(MEMORY_PREFIX).strip()
    heading, _, section = block.split("\n\n")[0].partition("\n")
    lines = [line.strip() for line in (section or heading).splitlines() if line.strip()]
    return "(local model) From memory I was given: " + " ".join(lines)


def _chunk(number: int, delta: dict[str, Any], finish: str | None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": f"local-{number}", "object": "chat.completion.chunk", "created": int(time.time())}
    return f"data: {json.dumps(body | {'model': 'local', 'choices': [choice]})}\n\n".encode()


class LocalModel(BaseHTTPRequestHandler):
    """POST /v1/chat/completions as OpenAI answers it; a stream is one chunk per word."""

    count = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        LocalModel.count += 1
        text = local_answer(body.get("messages", []))
        self.send_response(200)
        if body.get("stream"):  # HTTP/1.0: the stream ends when the connection closes
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            words = text.split(" ")
            self.wfile.write(_chunk(self.count, {"role": "assistant", "content": ""}, None))
            for position, word in enumerate(words):
                piece = word if position == len(words) - 1 else word + " "
                self.wfile.write(_chunk(self.count, {"content": piece}, None))
            self.wfile.write(_chunk(self.count, {}, "stop") + b"data: [DONE]\n\n")
            return
        message = {"role": "assistant", "content": text}
        answer = {"id": f"local-{self.count}", "object": "chat.completion", "created": int(time.time())}
        choices = [{"index": 0, "message": message, "finish_reason": "stop"}]
        data = json.dumps(answer | {"model": "local", "choices": choices}).encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def start_local_model() -> str:
    """Serve the stand-in on a free port of 127.0.0.1, in a daemon thread; its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), LocalModel)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def chat_model() -> tuple[OpenAI, str, str]:
    """The OpenAI client, the model name and a description: the real API with a key, else the stand-in."""
    if os.getenv("OPENAI_API_KEY"):
        model = os.getenv("OPENAI_MODEL") or "gpt-4o-mini"
        return OpenAI(), model, f"OpenAI model {model}"
    return (
        OpenAI(api_key="local", base_url=start_local_model()),
        "local",
        "a local stand-in model (no OPENAI_API_KEY)",
    )


# --- the chat ------------------------------------------------------------------------------------


def say(chat: MemoryOpenAI, model: str, history: list[dict[str, Any]], message: str) -> str:
    """One turn: the answer printed as it streams in; memory is read before and written after."""
    history.append({"role": "user", "content": message})
    stream = chat.chat.completions.create(model=model, messages=history, stream=True)
    parts: list[str] = []
    for chunk in stream:
        piece = (chunk.choices[0].delta.content or "") if chunk.choices else ""
        parts.append(piece)
        print(piece, end="", flush=True)
    print()
    history.append({"role": "assistant", "content": "".join(parts)})
    return "".join(parts)


def interactive(chat: MemoryOpenAI, memory: MemoryClient, model: str, user: str) -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    print(
        "Type a message; /memory shows what Hippocampus remembers, /quit (or Ctrl-D) ends.", file=sys.stderr
    )
    while True:
        try:
            message = input(f"{user}> ").strip()
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return
        if message in ("/quit", "/exit"):
            return
        if message == "/memory":
            print(
                memory.get(user) or "(no summary yet: turns are condensed a few seconds after they are sent)"
            )
        elif message:
            try:
                say(chat, model, history, message)
            except APIError as error:  # the model's own failure: report it, keep the chat open
                history.pop()
                print(f"model error: {error}", file=sys.stderr)


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="A terminal chat with Hippocampus memory.")
    parser.add_argument("--user", default="alice", help="whose memory (default: alice)")
    endpoint = os.getenv("HIPPOCAMPUS_ENDPOINT") or "http://127.0.0.1:3000"
    parser.add_argument("--endpoint", default=endpoint, help=f"the Hippocampus API (default: {endpoint})")
    tenant = os.getenv("HIPPOCAMPUS_TENANT") or "acme"
    parser.add_argument("--tenant", default=tenant, help=f"the tenant (default: {tenant})")
    parser.add_argument("--once", metavar="MESSAGE", help="send one message, print the answer and exit")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    client, model, described = chat_model()
    print(
        f"Memory: {args.endpoint}, tenant {args.tenant}, user {args.user}; chat: {described}.",
        file=sys.stderr,
    )
    # `with` closes the client at the end: the turns still queued are sent before the exit.
    with MemoryClient(endpoint=args.endpoint, tenant=args.tenant) as memory:
        chat = with_memory(client, memory, user=args.user)
        if args.once is not None:
            say(chat, model, [{"role": "system", "content": SYSTEM_PROMPT}], args.once)
        else:
            interactive(chat, memory, model, args.user)
    return 0


if __name__ == "__main__":
    sys.exit(main())
