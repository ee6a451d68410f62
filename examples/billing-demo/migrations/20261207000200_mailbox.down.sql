DROP TABLE mailbox;
