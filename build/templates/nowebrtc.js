// Nothing leaves the tab. The Content-Security-Policy closes every way out but WebRTC, for which
// Chromium enforces no directive (an RTCPeerConnection's offer sends UDP to any STUN address given).
// The page never uses WebRTC, so its constructors are gone before any other script of the page or
// the worker runs. (A script already running could still find them in a new same-origin frame; no
// link or input runs one: the policy allows only this site's scripts and hashed inline ones.)
for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel", "RTCRtpTransceiver",
                    "RTCIceTransport", "RTCSctpTransport"]) {
  if (name in self) Object.defineProperty(self, name, {value: undefined, writable: false, configurable: false});
}
