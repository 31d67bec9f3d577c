# The ASGI application hypercorn serves for the interop tests (.ci/http-peers.sh): the files of
# the folder in COURIER_PEER_FILES under /files/, the request body back from POST /echo, and a body
# followed by trailer fields from /trailers. The same routes the other peers serve.
import os

FILES = os.environ["COURIER_PEER_FILES"]


async def read_body(receive):
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return bytes(body)


async def reply(send, status, headers, body, trailers=None):
    await send({"type": "http.response.start", "status": status, "headers": headers, "trailers": trailers is not None})
    await send({"type": "http.response.body", "body": body, "more_body": False})
    if trailers is not None:
        await send({"type": "http.response.trailers", "headers": trailers, "more_trailers": False})


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    path, method = scope["path"], scope["method"]
    if path == "/echo" and method in ("POST", "PUT"):
        body = await read_body(receive)
        if body is None:
            return
        await reply(send, 200, [(b"content-type", b"application/octet-stream")], body)
        return
    await read_body(receive)
    if path == "/trailers":
        trailers = [(b"courier-trailer", b"yes")] if "http.response.trailers" in scope.get("extensions", {}) else None
        await reply(send, 200, [(b"content-type", b"text/plain"), (b"trailer", b"courier-trailer")], b"a body with trailers\n", trailers)
        return
    if path.startswith("/files/") and method in ("GET", "HEAD"):
        name = path[len("/files/"):]
        full = os.path.join(FILES, name)
        if "/" not in name and os.path.isfile(full):
            with open(full, "rb") as f:
                data = f.read()
            headers = [(b"content-type", b"application/octet-stream"), (b"content-length", str(len(data)).encode())]
            await reply(send, 200, headers, b"" if method == "HEAD" else data)
            return
    await reply(send, 404, [(b"content-type", b"text/plain")], b"not found\n")
