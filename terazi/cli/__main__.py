from terazi.cli import main

main()
