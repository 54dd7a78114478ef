package daytonatest

// The object storage the SDK pushes a build's context to: its push access
// (GET /object-storage/push-access) and an S3 server (gofakes3, the SDK
// talks to it with aws-sdk-go-v2, path-style), from which a build reads
// <org>/<hash>/context.tar for its COPY and ADD steps.

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

const (
	// OpPushAccess is the API's push access to the object storage.
	OpPushAccess = "getPushAccess"
	// OpStorage is any call to the object storage (S3), recorded apart.
	OpStorage = "object-storage"

	storagePrefix = "/storage"
	storageBucket = "daytona-volume-builds"
	organization  = "org-emulator"
)

// objectStorage is the emulator's S3: an in-memory bucket.
type objectStorage struct {
	backend *s3mem.Backend
	handler http.Handler
}

func newObjectStorage() (*objectStorage, error) {
	b := s3mem.New()
	if err := b.CreateBucket(storageBucket); err != nil {
		return nil, fmt.Errorf("object storage: %w", err)
	}
	return &objectStorage{backend: b, handler: http.StripPrefix(storagePrefix, gofakes3.New(b).Server())}, nil
}

// pushAccess answers GET /object-storage/push-access: where and with what
// the SDK uploads a build's context.
func (s *Server) pushAccess(h *handlerCtx) {
	h.json(http.StatusOK, map[string]any{
		"accessKey": "emulator-access-key", "secret": "emulator-secret", "sessionToken": "emulator-session",
		"storageUrl": s.hs.URL + storagePrefix, "organizationId": organization, "bucket": storageBucket,
	})
}

// extractContext writes the build context of hash (context.tar, as the
// SDK pushed it) into dir.
func (s *Server) extractContext(hash, dir string) error {
	obj, err := s.storage.backend.GetObject(storageBucket, organization+"/"+hash+"/context.tar", nil)
	if err != nil {
		return fmt.Errorf("context %s: %w", hash, err)
	}
	defer obj.Contents.Close()
	tr := tar.NewReader(obj.Contents)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("context %s: %w", hash, err)
		}
		name := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(filepath.ToSlash(filepath.Clean("/"+hdr.Name)), "/")))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(name), 0o755); err == nil {
				err = writeFile(name, tr, os.FileMode(hdr.Mode)&0o777|0o200)
			}
		}
		if err != nil {
			return fmt.Errorf("context %s: %s: %w", hash, hdr.Name, err)
		}
	}
}
