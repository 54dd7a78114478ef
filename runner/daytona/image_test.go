package daytona

import "testing"

func TestContextSources(t *testing.T) {
	df := "FROM python:3.12-slim\nRUN mkdir -p /app\nCOPY app/ /app/\nCOPY --chown=1000 a.txt b.txt /etc/\n" +
		"ADD https://example.com/x.tgz /opt/\nCOPY --from=build /out /app/out\nCOPY [\"my file\", \"/x/\"]\n" +
		"COPY one \\\n  two /dst/\nWORKDIR /app\n"
	want := "FROM python:3.12-slim\nRUN mkdir -p /app\nCOPY tasks/t/environment/app /app/\nCOPY --chown=1000 tasks/t/environment/a.txt tasks/t/environment/b.txt /etc/\n" +
		"ADD https://example.com/x.tgz /opt/\nCOPY --from=build /out /app/out\nCOPY [\"tasks/t/environment/my file\",\"/x/\"]\n" +
		"COPY tasks/t/environment/one tasks/t/environment/two /dst/\n\nWORKDIR /app\n"
	if got := contextSources(df, "tasks/t/environment"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
