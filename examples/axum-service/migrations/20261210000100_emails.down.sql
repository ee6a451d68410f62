DROP TABLE email_reports;
DROP TABLE report_state;
DROP TABLE email_deliveries;
DROP TABLE emails;
