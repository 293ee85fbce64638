module github.com/fourkingdoms/fourkingdoms/cmd

go 1.26.0
