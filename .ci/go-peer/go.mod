module courier/gopeer

go 1.19
