module swarmbench/target

go 1.26
