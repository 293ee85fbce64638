// Package auth provides the identities, signed tokens and key sets shared by
// every Four Kingdoms service.
//
// Tokens are JWTs signed with Ed25519 (alg "EdDSA"). Every service loads a
// [KeySet] file; a service can verify any token whose "kid" header names a
// key in the set, and can sign only if the set holds a private key, which
// only the service that mints tokens is given ([KeySet.PublicOnly] makes
// the others' set). Several keys may be present at once so keys can be
// rotated without downtime ([Merge]; docs/security.md).
//
// An authenticated caller is described by an [Identity], which the gRPC
// server bootstrap stores in the request context; handlers read it with
// [FromContext] and check permissions with [RequireRole].
package auth
