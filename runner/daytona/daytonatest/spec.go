package daytonatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The modules whose api/openapi.yaml describe the wire.
const (
	APIClientModule     = "github.com/daytonaio/daytona/libs/api-client-go"
	ToolboxClientModule = "github.com/daytonaio/daytona/libs/toolbox-api-client-go"
)

// Specs are the two parsed OpenAPI documents the emulator validates
// against, as routers. They are read-only once loaded and may be shared by
// many servers.
type Specs struct {
	apiRouter, toolboxRouter routers.Router
}

// LoadSpecs locates the api-client and toolbox-client modules with "go list
// -m -json" (in the module cache whenever forge builds) and loads their
// api/openapi.yaml.
func LoadSpecs() (*Specs, error) {
	out, err := exec.Command("go", "list", "-m", "-json", APIClientModule, ToolboxClientModule).Output()
	if err != nil {
		return nil, fmt.Errorf("locate the Daytona client modules with go list: %w", err)
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var m struct{ Path, Dir string }
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("read go list output: %w", err)
		}
		dirs[m.Path] = m.Dir
	}
	if dirs[APIClientModule] == "" || dirs[ToolboxClientModule] == "" {
		return nil, fmt.Errorf("go list found no directory for %s or %s (is the module downloaded?)", APIClientModule, ToolboxClientModule)
	}
	load := func(module, base string) (routers.Router, error) {
		path := filepath.Join(dirs[module], "api", "openapi.yaml")
		doc, err := openapi3.NewLoader().LoadFromFile(path)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", path, err)
		}
		// One schema's example (CompletionItem) is itself invalid.
		if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
			return nil, fmt.Errorf("validate %s: %w", path, err)
		}
		doc.Servers = openapi3.Servers{{URL: base}}
		r, err := gorillamux.NewRouter(doc)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", path, err)
		}
		return r, nil
	}
	s := &Specs{}
	if s.apiRouter, err = load(APIClientModule, apiPrefix); err != nil {
		return nil, err
	}
	if s.toolboxRouter, err = load(ToolboxClientModule, "/"); err != nil {
		return nil, err
	}
	return s, nil
}

// bearerAuth accepts any "Bearer <token>"; whether the token is right is the
// handlers' business (they answer 401 like the real service).
func bearerAuth(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecurityScheme == nil || in.SecurityScheme.Type != "http" {
		return fmt.Errorf("security scheme %q not offered by the emulator", in.SecuritySchemeName)
	}
	if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
		return fmt.Errorf("no bearer token")
	}
	return nil
}

// validateOptions are the kin-openapi options for every check: defaults are
// never written into the request, and every problem is reported at once.
func validateOptions() *openapi3filter.Options {
	return &openapi3filter.Options{AuthenticationFunc: bearerAuth, SkipSettingDefaults: true, MultiError: true}
}

// findRoute finds the operation for r on the given surface, and the input
// that checks the request and its answers against the spec. specPath is
// the request path as the spec sees it (the toolbox prefix removed).
func (s *Specs) findRoute(toolbox bool, r *http.Request, specPath string, body []byte) (*openapi3filter.RequestValidationInput, string, error) {
	router := s.apiRouter
	if toolbox {
		router = s.toolboxRouter
	}
	req := r.Clone(r.Context())
	req.URL.Path = specPath
	req.URL.RawPath = ""
	req.Body = http.NoBody
	if len(body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return nil, "", err
	}
	return &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route, Options: validateOptions(),
	}, route.Operation.OperationID, nil
}

// validateResponse checks an answer to the request v checked.
func validateResponse(ctx context.Context, v *openapi3filter.RequestValidationInput, status int, header http.Header, body []byte) error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: v,
		Status:                 status,
		Header:                 header,
		Options:                validateOptions(),
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(ctx, in)
}
