// The sae object class request protocol version, shared by the OSD class and its clients.
// Bump it whenever the wire format of a method's request or reply changes (docs describe it).
#pragma once

#define SAE_SCAN_PROTOCOL 1
