// Package imagetest holds the container image test (make image-test): the
// images of scripts/images.sh run with podman as a deployment runs them,
// TLS between every party and the token keys split, and a whole game is
// played through them by the bots' image. It has no code of its own: see
// images_test.go and docs/images.md.
package imagetest
