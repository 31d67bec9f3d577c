module courier/gobench

go 1.19
