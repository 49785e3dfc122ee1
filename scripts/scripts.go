// Package scripts holds the repository's shell scripts that the harness
// also runs itself: image.sh builds the Docker backend's default image;
// `make image` runs it from here, `harness image build` from the copy
// embedded in the binary, so there is one implementation of the build.
package scripts

import _ "embed"

// ImageBuild is image.sh: `bash -s NAME` (or a file of it) builds the
// image NAME; SHIM_SRC names the malloc shim's C source when the script
// does not run from a checkout, FORCE=1 rebuilds an image that exists.
//
//go:embed image.sh
var ImageBuild []byte
