package main

import (
	"embed"
	"io/fs"

	"github.com/relayrt/relay/mcp"
)

// The skills of the fixture (the Skills extension, SEP-2640; the 0.2 suite's
// sep-2640-skills-* scenarios): two skills, read from the skills directory beside this file,
// one at a nested path and one at the top. Serving them declares
// io.modelcontextprotocol/skills with directoryRead, lists each SKILL.md in resources/list,
// and answers skills/list, skills/get, resources/read for every file and
// resources/directory/read for every directory: skill://acme/billing/refunds has a
// subdirectory, examples, for the suite's directory checks.
//
//go:embed skills
var skillFiles embed.FS

// fixtureSkills maps each skill's path to its directory under skills/.
var fixtureSkills = map[string]string{
	"acme/billing/refunds": "skills/refunds",
	"pdf-processing":       "skills/pdf-processing",
}

func addSkills(s *mcp.Server) {
	for path, dir := range fixtureSkills {
		sub, err := fs.Sub(skillFiles, dir)
		if err == nil {
			err = s.AddSkillFS(path, sub)
		}
		if err != nil {
			panic(err) // the fixture is part of the program: a bad skill is a bug in it
		}
	}
}
