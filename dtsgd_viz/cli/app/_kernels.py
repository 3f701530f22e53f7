"""The app's kernels end with their page.

Each page load of the dashboard starts a kernel (TensorFlow and all: about 800 MB).
Voila's page asks for that kernel to be shut down on ``beforeunload``, but the server
refuses the request (403, "'_xsrf' argument missing from POST": the page never got an
``_xsrf`` cookie; voila-dashboards/voila#1458), so every closed page used to leave its
kernel running until the server stopped.

``ShutdownWhenPageCloses`` is the kernel websocket connection the app's Voila uses
(``--Voila.kernel_websocket_connection_class``): when a kernel's last websocket closes
- the page was closed, reloaded or navigated away from, or the browser went - and no
page has reconnected ``GRACE`` seconds later, it shuts the kernel down. A kernel whose
page never connected (closed while the notebook was still running) is left to the idle
culler that ``voila_command`` also turns on.
"""

from __future__ import annotations

from jupyter_core.utils import ensure_async
from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection
from tornado.ioloop import IOLoop
from tornado.web import HTTPError

GRACE = 2.0  # seconds a kernel without a page waits for one to reconnect


class ShutdownWhenPageCloses(ZMQChannelsWebsocketConnection):
    """A kernel websocket connection that shuts its kernel down once no page is left."""

    def disconnect(self):
        super().disconnect()
        IOLoop.current().call_later(GRACE, self._shutdown_if_unused, self.kernel_id)

    async def _shutdown_if_unused(self, kernel_id):
        manager = self.multi_kernel_manager
        try:
            if manager.kernel_model(kernel_id)["connections"]:  # a page is (back) on it
                return
            self.log.info("Kernel %s: its page closed; shutting it down.", kernel_id)
            await ensure_async(manager.shutdown_kernel(kernel_id))
        except (KeyError, HTTPError):  # already gone: shut down, culled, or the server stopping
            pass
