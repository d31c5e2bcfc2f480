/* version.h — the release and wire protocol versions. */
#ifndef GF_VERSION_H
#define GF_VERSION_H

#define GF_VERSION "0.1.0"
/* Bumped on any incompatible change of the msgpack message set. */
#define GF_PROTOCOL_VERSION 1

#endif
